//! One configured model behind one endpoint: the HTTP exchange, what an
//! error reply means (retry, adapt the request, or stop), the retries and
//! the completion budget. The provider's wire format comes from its
//! [`Api`]; nothing here matches on providers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::config::redact_key;
use super::error_body::{
    EXCERPT_CHARS, ErrorInfo, error_in_success, error_info, excerpt, is_billing, mentions_no_tools,
};
use super::provider::{Adaptation, Api, Call, KeyHeader, Learned};
use super::reply::{ChatReply, Finish, ModelId};
use super::request::ChatRequest;
use super::retry::{GiveUp, Retries, retry_after};
use super::{ModelConfig, ModelError, TokenUsage};

/// Most bytes of a reply body read; the rest is dropped.
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// How one HTTP exchange failed.
enum Failure {
    /// 429, 408 or 5xx (also as an error body sent with 200): worth another try.
    Status {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// No reply in time.
    Timeout,
    /// Could not connect or the connection broke.
    Connect(String),
    /// A 400 asking for a parameter change this client knows how to make.
    Adapt(Adaptation, String),
    /// Anything else: final.
    Fatal(ModelError),
}

/// Talks to one model. Cheap to clone; clones share what was learned about
/// the endpoint.
#[derive(Clone)]
pub(crate) struct Endpoint {
    cfg: ModelConfig,
    api: &'static dyn Api,
    http: reqwest::Client,
    url: String,
    id: ModelId,
    learned: Arc<Mutex<Learned>>,
    /// HTTP requests sent so far (shared by clones).
    sent: Arc<AtomicU64>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("cfg", &self.cfg)
            .field("url", &self.url)
            .finish()
    }
}

impl Endpoint {
    /// Builds the HTTP client for `cfg` (its `fallback` is ignored); fails
    /// on an invalid base URL, key or setting. `fallback` marks the replies
    /// as the fallback model's.
    pub(crate) fn new(cfg: ModelConfig, fallback: bool) -> Result<Endpoint, ModelError> {
        let api = cfg.provider.api();
        let base = super::config::normalize_base_url(cfg.provider, &cfg.base_url, cfg.vars)?;
        let route = api.route(&base)?;
        cfg.check()?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &cfg.api_key {
            let bad_key = || {
                ModelError::Config(format!(
                    "the API key contains characters that cannot go into an HTTP header; check {}",
                    cfg.key_setting()
                ))
            };
            let (name, value) = match route.key {
                KeyHeader::Bearer => ("authorization", format!("Bearer {}", key.expose())),
                KeyHeader::Named(name) => (name, key.expose().to_string()),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| bad_key())?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static(name), value);
        }
        for (name, value) in route.headers {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(concat!("compute-bot/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(cfg.timeout.min(Duration::from_secs(10)))
            // Never follow redirects: the key would travel to the new host.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        let learned = api.known(&cfg.model, &route);
        let id = ModelId {
            provider: cfg.provider.as_str().to_string(),
            model: cfg.model.clone(),
            fallback,
        };
        Ok(Endpoint {
            cfg,
            api,
            http,
            url: route.url,
            id,
            learned: Arc::new(Mutex::new(learned)),
            sent: Arc::default(),
        })
    }

    /// HTTP requests this endpoint (and its clones) sent so far, answered
    /// or not.
    pub(crate) fn requests_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// The URL requests go to.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The model, as replies name it.
    pub(crate) fn id(&self) -> &ModelId {
        &self.id
    }

    /// False once the endpoint said it does not do tools.
    pub(crate) fn tools_supported(&self) -> bool {
        !self.learned().no_tools
    }

    fn learned(&self) -> Learned {
        *self.learned.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn learn(&self, f: impl FnOnce(&mut Learned)) {
        f(&mut self.learned.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// The completion budget of the next request that sets none (the
    /// configured `max_tokens`, or what a cut reply raised it to).
    pub(crate) fn completion_budget(&self) -> u32 {
        self.learned().budget.unwrap_or(self.cfg.max_tokens)
    }

    /// The most a cut reply may raise the budget to.
    fn budget_cap(&self) -> u32 {
        self.cfg.max_tokens.saturating_mul(4)
    }

    /// See [`super::ModelClient::complete`]: one model, with its retries.
    pub(crate) async fn complete(&self, req: &ChatRequest) -> Result<ChatReply, ModelError> {
        let mut retries = Retries::new(self.cfg.max_retries, self.cfg.max_retry_time);
        let mut attempts: u32 = 0;
        let mut usage = TokenUsage::default();
        let mut reasoning_tokens = 0;
        let mut last_adapt: Option<Adaptation> = None;
        loop {
            attempts += 1;
            let learned = self.learned();
            let budget = self.budget(req, &learned);
            let body = self.api.body(
                req,
                Call {
                    model: &self.cfg.model,
                    temperature: self.cfg.temperature,
                    budget,
                    learned: &learned,
                },
            );
            tracing::debug!(
                provider = %self.cfg.provider,
                url = %self.url,
                model = %self.cfg.model,
                attempt = attempts,
                budget,
                "model request"
            );
            let failure = match self.send_once(&body).await {
                Ok(mut reply) => {
                    usage.add(reply.usage);
                    reasoning_tokens += reply.reasoning_tokens;
                    reply.usage = usage;
                    reply.reasoning_tokens = reasoning_tokens;
                    reply.max_tokens = budget;
                    reply.requests = attempts;
                    if reply.finish == Finish::Length {
                        let raised = budget.saturating_mul(2).min(self.budget_cap());
                        let empty = reply.text.trim().is_empty() && reply.tool_call.is_none();
                        if raised > budget && req.max_tokens.is_none() {
                            tracing::warn!(
                                budget,
                                raised,
                                empty,
                                "the reply was cut at the token budget; raising it"
                            );
                            self.learn(|l| l.budget = Some(raised));
                            if empty {
                                continue;
                            }
                        }
                    }
                    tracing::debug!(
                        attempt = attempts,
                        input_tokens = ?usage.input_tokens,
                        output_tokens = ?usage.output_tokens,
                        reasoning_tokens,
                        elapsed_ms = retries.elapsed().as_millis() as u64,
                        "model reply"
                    );
                    return Ok(reply);
                }
                Err(f) => f,
            };
            let (final_err, retry_after) = match failure {
                Failure::Fatal(e) => return Err(e),
                Failure::Adapt(a, message) => {
                    if last_adapt == Some(a) {
                        return Err(ModelError::Rejected {
                            status: 400,
                            message,
                        });
                    }
                    tracing::info!(
                        ?a,
                        "the endpoint does not take a parameter; adapting (remembered for later calls)"
                    );
                    last_adapt = Some(a);
                    self.learn(|l| a.apply(l));
                    continue;
                }
                other => self.retryable(other, attempts, &retries),
            };
            let delay = match retries.next(retry_after) {
                Ok(delay) => delay,
                Err(GiveUp::NoRetriesLeft) => {
                    tracing::warn!(attempts, "model request failed; no retries left");
                    return Err(final_err);
                }
                Err(GiveUp::PastRetryTime) => {
                    tracing::warn!(
                        attempts,
                        budget_ms = self.cfg.max_retry_time.as_millis() as u64,
                        "model request failed; waiting again would exceed the retry time budget"
                    );
                    return Err(final_err.with_retry_after(retry_after));
                }
            };
            tracing::warn!(
                attempt = attempts,
                delay_ms = delay.as_millis() as u64,
                error = %final_err,
                "model request failed; retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// The error a retryable failure becomes when no retry follows, and the
    /// wait the server asked for.
    fn retryable(
        &self,
        failure: Failure,
        attempts: u32,
        retries: &Retries,
    ) -> (ModelError, Option<Duration>) {
        match failure {
            Failure::Status {
                status,
                message,
                retry_after,
            } => (
                ModelError::Unavailable {
                    status,
                    message,
                    attempts,
                    elapsed: retries.elapsed(),
                    retry_after: None,
                },
                retry_after,
            ),
            Failure::Timeout => (
                ModelError::Timeout {
                    timeout: self.cfg.timeout,
                    attempts,
                    url: self.url.clone(),
                },
                None,
            ),
            Failure::Connect(detail) => (
                ModelError::Connect {
                    url: self.url.clone(),
                    detail,
                    attempts,
                    url_var: self.cfg.vars.base_url,
                },
                None,
            ),
            Failure::Fatal(e) => (e, None),
            Failure::Adapt(_, message) => (
                ModelError::Rejected {
                    status: 400,
                    message,
                },
                None,
            ),
        }
    }

    /// The completion budget of the next request for `req`.
    fn budget(&self, req: &ChatRequest, learned: &Learned) -> u32 {
        match req.max_tokens {
            // Reasoning models spend hidden tokens first: a small budget
            // (an explanation's) would be used up before any text.
            Some(n) if super::config::is_reasoning_model(&self.cfg.model) => {
                n.max(self.cfg.max_tokens)
            }
            Some(n) => n,
            None => learned.budget.unwrap_or(self.cfg.max_tokens),
        }
    }

    /// One HTTP exchange.
    async fn send_once(&self, body: &Value) -> Result<ChatReply, Failure> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        let key = self.cfg.api_key.as_ref().map(|k| k.expose());
        let resp = self
            .http
            .post(&self.url)
            .timeout(self.cfg.timeout)
            .json(body)
            .send()
            .await
            .map_err(|e| self.transport_failure(&e, key))?;
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        if (300..400).contains(&status) {
            let location = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("nowhere (no location header)");
            return Err(Failure::Fatal(ModelError::Redirected {
                status,
                url: self.url.clone(),
                location: redact_key(&excerpt(location, 200), key),
                url_var: self.cfg.vars.base_url,
            }));
        }
        let text = read_capped(resp, MAX_BODY_BYTES)
            .await
            .map_err(|e| self.transport_failure(&e, key))?;
        if (200..300).contains(&status) {
            // OpenRouter (and some proxies) report errors that happen once
            // the model started with HTTP 200 and an `error` body.
            if let Some(err) = error_in_success(&text) {
                let code = err.code_status.unwrap_or(502);
                tracing::debug!(code, message = %err.message, "an error body came with HTTP 200");
                return Err(self.classify(code, err, retry_after, body, key));
            }
            return self.parse_success(&text).map_err(Failure::Fatal);
        }
        let err = error_info(&text);
        Err(self.classify(status, err, retry_after, body, key))
    }

    /// What an error reply means: retry, adapt, or stop with the provider's message.
    fn classify(
        &self,
        status: u16,
        err: ErrorInfo,
        retry_after: Option<Duration>,
        body: &Value,
        key: Option<&str>,
    ) -> Failure {
        let message = redact_key(&err.message, key);
        tracing::debug!(status, %message, "model endpoint returned an error");
        let lower = err.lower(&message);
        if is_billing(status, &lower) {
            return Failure::Fatal(ModelError::Quota { status, message });
        }
        let sent_tools = body.get("tools").is_some();
        if sent_tools && matches!(status, 400 | 404 | 422 | 501) && mentions_no_tools(&lower) {
            return Failure::Adapt(Adaptation::NoTools, message);
        }
        match status {
            401 | 403 => Failure::Fatal(ModelError::Auth {
                status,
                message,
                setting: self.cfg.key_setting(),
                base_url: self.cfg.base_url.clone(),
            }),
            404 => Failure::Fatal(ModelError::NotFound {
                model: self.cfg.model.clone(),
                url: self.url.clone(),
                message,
                model_var: self.cfg.vars.model,
                url_var: self.cfg.vars.base_url,
            }),
            408 | 425 | 429 | 500..=599 => Failure::Status {
                status,
                message,
                retry_after,
            },
            400 => match self.api.adaptation(&err, &lower, body) {
                Some(a) => Failure::Adapt(a, message),
                None => Failure::Fatal(ModelError::Rejected { status, message }),
            },
            _ => Failure::Fatal(ModelError::Rejected { status, message }),
        }
    }

    /// Reads a 2xx body in the provider's format.
    fn parse_success(&self, text: &str) -> Result<ChatReply, ModelError> {
        let key = self.cfg.api_key.as_ref().map(|k| k.expose());
        let mut reply = self
            .api
            .parse(text)
            .map_err(|detail| ModelError::BadReply {
                detail,
                excerpt: redact_key(&excerpt(text, EXCERPT_CHARS), key),
                expected: self.api.expected().to_string(),
                url_var: self.cfg.vars.base_url,
            })?;
        if reply.model.is_empty() {
            reply.model = self.cfg.model.clone();
        }
        reply.answered_by = self.id.clone();
        Ok(reply)
    }

    /// What a transport error means.
    fn transport_failure(&self, e: &reqwest::Error, key: Option<&str>) -> Failure {
        // reqwest errors carry the URL, never headers; redact anyway in case
        // someone put the key into the base URL.
        let detail = redact_key(&error_chain(e), key);
        if e.is_timeout() {
            Failure::Timeout
        } else if e.is_decode() {
            Failure::Fatal(ModelError::BadReply {
                detail,
                excerpt: String::new(),
                expected: "a JSON reply".into(),
                url_var: self.cfg.vars.base_url,
            })
        } else {
            // Connecting failed or the connection broke (also a request or
            // body error).
            Failure::Connect(detail)
        }
    }
}

/// Reads at most `cap` bytes of the body as (lossy) UTF-8.
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<String, reqwest::Error> {
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if buf.len() >= cap {
            tracing::warn!(cap, "model reply body cut at the size cap");
            break;
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let t = inner.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = inner.source();
    }
    s
}
