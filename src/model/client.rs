//! The HTTP client for both wire formats, with bounded retries.

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use super::config::redact_key;
use super::{ModelConfig, ModelError, Provider, TokenUsage};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    /// The caller (prompt, repair notes).
    User,
    /// The model (earlier replies).
    Assistant,
}

impl Role {
    /// The wire name (`user`, `assistant`), the same for both providers.
    fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who wrote it.
    pub(crate) role: Role,
    /// The text.
    pub(crate) content: String,
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    pub(crate) fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A tool the model is made to call (structured output): OpenAI
/// `tools` + `tool_choice: {"type":"function",...}`, Anthropic `tools` +
/// `tool_choice: {"type":"tool",...}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// The tool's name (`run_python`).
    pub(crate) name: String,
    /// What it is for, as the model reads it.
    pub(crate) description: String,
    /// The JSON Schema of its arguments.
    pub(crate) parameters: Value,
}

/// A provider-neutral chat request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatRequest {
    /// The system prompt (the first message for OpenAI, top-level `system` for Anthropic).
    pub system: String,
    /// The conversation, starting with a user message.
    pub messages: Vec<Message>,
    /// Completion budget; the configured `max_tokens` when `None` (then a
    /// reply cut at the budget raises it for the following calls).
    pub max_tokens: Option<u32>,
    /// A tool the model must call. Sent only while the endpoint accepts
    /// tools; after a "tools not supported" reply the client remembers it and
    /// asks in plain text (the caller then reads a fenced block).
    pub tool: Option<Tool>,
}

/// Why the model stopped writing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Finish {
    /// It finished (`stop`, `end_turn`, `tool_calls`, `tool_use`, ...).
    #[default]
    Complete,
    /// It hit the token budget (`length`, `max_tokens`): the reply is cut.
    Length,
    /// A content filter stopped it.
    Filtered,
}

/// The model's answer to one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatReply {
    /// The text of the answer (all text parts joined).
    pub text: String,
    /// The name and arguments of the tool the model called, if it called one.
    pub(crate) tool_call: Option<(String, Value)>,
    /// The model's refusal message (OpenAI `refusal`, Anthropic `stop_reason: refusal`).
    pub(crate) refusal: Option<String>,
    /// Why it stopped.
    pub(crate) finish: Finish,
    /// Tokens used by this call, as the responses said (all requests of the
    /// call that returned usage, a cut empty reply included).
    pub usage: TokenUsage,
    /// Of the output tokens, those spent on hidden reasoning, when reported.
    pub reasoning_tokens: u64,
    /// The completion budget of the last request.
    pub max_tokens: u32,
    /// HTTP requests this call made (retries and adaptations included).
    pub requests: u32,
    /// The model that answered, as reported by the endpoint (or the configured name).
    pub model: String,
}

/// What this client learned about its endpoint, shared by its clones: the
/// parameters it accepts and the budget that fits, so no call repeats a
/// rejected request.
#[derive(Debug, Clone, Copy, Default)]
struct Learned {
    /// Send `max_completion_tokens` instead of `max_tokens`.
    completion_tokens: bool,
    /// Leave `temperature` out (only the default is accepted).
    no_temperature: bool,
    /// The endpoint does not do tools: ask in plain text.
    no_tools: bool,
    /// A budget raised after a cut reply.
    budget: Option<u32>,
}

/// Talks to one configured model. Cheap to clone; clones share what was
/// learned about the endpoint.
#[derive(Clone)]
pub struct ModelClient {
    cfg: ModelConfig,
    http: reqwest::Client,
    url: String,
    learned: std::sync::Arc<std::sync::Mutex<Learned>>,
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelClient")
            .field("cfg", &self.cfg)
            .field("url", &self.url)
            .finish()
    }
}

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

/// Request changes some endpoints demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adaptation {
    /// `max_tokens` → `max_completion_tokens` (OpenAI reasoning models).
    MaxCompletionTokens,
    /// Drop `temperature` (only the default is supported).
    DropTemperature,
    /// The endpoint or model does not do tools.
    NoTools,
}

const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(20);
const EXCERPT_CHARS: usize = 200;
/// Most bytes of a reply body read; the rest is dropped.
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// How the key travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI and compatible).
    Bearer,
    /// `api-key: <key>` (Azure OpenAI, both forms).
    AzureApiKey,
    /// `x-api-key: <key>` (Anthropic).
    XApiKey,
}

/// The Azure OpenAI `api-version` used for a deployments URL that names none
/// (a generally available version).
pub const AZURE_DEFAULT_API_VERSION: &str = "2024-10-21";

/// The chat URL for a base URL, and how the key goes. Azure OpenAI in both
/// forms: `https://R.openai.azure.com/openai/deployments/D?api-version=V`
/// (the version kept as a query parameter, [`AZURE_DEFAULT_API_VERSION`]
/// when missing) and `https://R.openai.azure.com/openai/v1` (no version);
/// both take the key in an `api-key` header. Any other query string is kept
/// after the path.
fn endpoint_of(cfg: &ModelConfig, base: &str) -> Result<(String, KeyHeader), ModelError> {
    if cfg.provider == Provider::Anthropic {
        return Ok((format!("{base}/v1/messages"), KeyHeader::XApiKey));
    }
    let url = reqwest::Url::parse(base).map_err(|e| {
        ModelError::Config(format!("COMPUTE_BOT_BASE_URL=`{base}` is not a URL ({e})"))
    })?;
    let host = url.host_str().unwrap_or("").to_ascii_lowercase();
    let path = url.path().trim_end_matches('/').to_string();
    let azure_host = [
        ".openai.azure.com",
        ".cognitiveservices.azure.com",
        ".services.ai.azure.com",
    ]
    .iter()
    .any(|h| host.ends_with(h));
    let deployments = path.contains("/openai/deployments/");
    let v1 = path.ends_with("/openai/v1");
    let mut pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if deployments && !pairs.iter().any(|(k, _)| k == "api-version") {
        pairs.push(("api-version".into(), AZURE_DEFAULT_API_VERSION.into()));
    }
    let mut chat = url.clone();
    chat.set_path(&format!("{path}/chat/completions"));
    chat.set_query(None);
    if !pairs.is_empty() {
        chat.query_pairs_mut().extend_pairs(pairs);
    }
    let header = if azure_host || deployments || v1 {
        KeyHeader::AzureApiKey
    } else {
        KeyHeader::Bearer
    };
    Ok((chat.to_string(), header))
}

impl ModelClient {
    /// Builds the HTTP client; fails on an invalid base URL, key or setting.
    pub fn new(cfg: ModelConfig) -> Result<ModelClient, ModelError> {
        let base = super::config::normalize_base_url(cfg.provider, &cfg.base_url)?;
        let (url, key_header) = endpoint_of(&cfg, &base)?;
        cfg.check()?;
        let mut headers = HeaderMap::new();
        if let Some(key) = &cfg.api_key {
            let bad_key = || {
                ModelError::Config(format!(
                    "the API key contains characters that cannot go into an HTTP header; check {}",
                    cfg.key_setting()
                ))
            };
            let (name, value) = match key_header {
                KeyHeader::Bearer => ("authorization", format!("Bearer {}", key.expose())),
                KeyHeader::AzureApiKey => ("api-key", key.expose().to_string()),
                KeyHeader::XApiKey => ("x-api-key", key.expose().to_string()),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| bad_key())?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if cfg.provider == Provider::Anthropic {
            headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(concat!("compute-bot/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(cfg.timeout.min(Duration::from_secs(10)))
            // Never follow redirects: the key would travel to the new host.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        // OpenAI's reasoning families are known to want these; other
        // endpoints teach the client with their first 400.
        let reasoning = cfg.provider == Provider::OpenAi
            && super::config::is_openai_reasoning_model(&cfg.model)
            && key_header == KeyHeader::Bearer;
        let learned = Learned {
            completion_tokens: reasoning,
            no_temperature: reasoning,
            ..Learned::default()
        };
        Ok(ModelClient {
            cfg,
            http,
            url,
            learned: std::sync::Arc::new(std::sync::Mutex::new(learned)),
        })
    }

    /// The URL requests go to.
    pub(crate) fn endpoint(&self) -> &str {
        &self.url
    }

    /// False once the endpoint said it does not do tools.
    pub fn tools_supported(&self) -> bool {
        !self.learned().no_tools
    }

    fn learned(&self) -> Learned {
        *self.learned.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn learn(&self, f: impl FnOnce(&mut Learned)) {
        f(&mut self.learned.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// The most a cut reply may raise the budget to.
    fn budget_cap(&self) -> u32 {
        self.cfg.max_tokens.saturating_mul(4)
    }

    /// Sends `req` and returns the model's answer. Retries 429, 408, 5xx
    /// (also an error body sent with 200), timeouts and connection errors
    /// with exponential backoff and jitter (or the server's `Retry-After`),
    /// at most `max_retries` times and never waiting past `max_retry_time`
    /// since the first request. Billing/quota errors, 401/403, 404, other
    /// 4xx, redirects and malformed replies are not retried. A 400 naming a
    /// parameter the endpoint does not take (`max_tokens`, `temperature`,
    /// tools) changes the request and is remembered for later calls. An
    /// empty reply cut at the budget (reasoning used it up) is sent again at
    /// once with twice the budget (up to 4× `max_tokens`); any cut reply
    /// raises the budget of later calls the same way.
    pub async fn complete(&self, req: &ChatRequest) -> Result<ChatReply, ModelError> {
        let start = Instant::now();
        let mut attempts: u32 = 0;
        let mut retries: u32 = 0;
        let mut usage = TokenUsage::default();
        let mut reasoning_tokens = 0;
        let mut last_adapt: Option<Adaptation> = None;
        loop {
            attempts += 1;
            let learned = self.learned();
            let budget = self.budget(req, &learned);
            let body = self.body(req, &learned, budget);
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
                        input_tokens = usage.input_tokens,
                        output_tokens = usage.output_tokens,
                        reasoning_tokens,
                        elapsed_ms = start.elapsed().as_millis() as u64,
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
                    self.learn(|l| match a {
                        Adaptation::MaxCompletionTokens => l.completion_tokens = true,
                        Adaptation::DropTemperature => l.no_temperature = true,
                        Adaptation::NoTools => l.no_tools = true,
                    });
                    continue;
                }
                other => self.retryable(other, attempts, start),
            };
            if retries >= self.cfg.max_retries {
                tracing::warn!(attempts, "model request failed; no retries left");
                return Err(final_err);
            }
            let delay = retry_after.unwrap_or_else(|| backoff(retries));
            if start.elapsed() + delay > self.cfg.max_retry_time {
                tracing::warn!(
                    attempts,
                    delay_ms = delay.as_millis() as u64,
                    budget_ms = self.cfg.max_retry_time.as_millis() as u64,
                    "model request failed; waiting again would exceed the retry time budget"
                );
                return Err(final_err.with_retry_after(retry_after));
            }
            tracing::warn!(
                attempt = attempts,
                delay_ms = delay.as_millis() as u64,
                error = %final_err,
                "model request failed; retrying"
            );
            retries += 1;
            tokio::time::sleep(delay).await;
        }
    }

    /// The error a retryable failure becomes when no retry follows, and the
    /// wait the server asked for.
    fn retryable(
        &self,
        failure: Failure,
        attempts: u32,
        start: Instant,
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
                    elapsed: start.elapsed(),
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

    /// The JSON body for `req` in this provider's format, with what the
    /// endpoint is known to accept.
    fn body(&self, req: &ChatRequest, learned: &Learned, budget: u32) -> Value {
        let msgs = req
            .messages
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": m.content}));
        let tool = req.tool.as_ref().filter(|_| !learned.no_tools);
        match self.cfg.provider {
            Provider::OpenAi => {
                let mut messages = Vec::with_capacity(req.messages.len() + 1);
                if !req.system.is_empty() {
                    messages.push(json!({"role": "system", "content": req.system}));
                }
                messages.extend(msgs);
                let mut body = json!({"model": self.cfg.model, "messages": messages});
                let budget_key = if learned.completion_tokens {
                    "max_completion_tokens"
                } else {
                    "max_tokens"
                };
                body[budget_key] = json!(budget);
                if !learned.no_temperature {
                    body["temperature"] = json!(self.cfg.temperature);
                }
                if let Some(t) = tool {
                    body["tools"] = json!([{"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}}]);
                    body["tool_choice"] = json!({"type": "function", "function": {"name": t.name}});
                }
                body
            }
            Provider::Anthropic => {
                let mut body = json!({
                    "model": self.cfg.model,
                    "max_tokens": budget,
                    "messages": msgs.collect::<Vec<_>>(),
                    "temperature": self.cfg.temperature,
                });
                if !req.system.is_empty() {
                    body["system"] = Value::String(req.system.clone());
                }
                if let Some(t) = tool {
                    body["tools"] = json!([{"name": t.name, "description": t.description, "input_schema": t.parameters}]);
                    body["tool_choice"] = json!({"type": "tool", "name": t.name});
                }
                body
            }
        }
    }

    /// One HTTP exchange.
    async fn send_once(&self, body: &Value) -> Result<ChatReply, Failure> {
        let key = self.cfg.api_key.as_ref().map(|k| k.expose());
        let resp = self
            .http
            .post(&self.url)
            .timeout(self.cfg.timeout)
            .json(body)
            .send()
            .await
            .map_err(|e| transport_failure(&e, key))?;
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
            }));
        }
        let text = read_capped(resp, MAX_BODY_BYTES)
            .await
            .map_err(|e| transport_failure(&e, key))?;
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
        let lower = format!("{} {} {}", err.kind, err.code, message).to_ascii_lowercase();
        if status == 402
            || lower.contains("insufficient_quota")
            || lower.contains("credit balance")
            || lower.contains("billing")
            || lower.contains("insufficient credits")
        {
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
            }),
            408 | 425 | 429 | 500..=599 => Failure::Status {
                status,
                message,
                retry_after,
            },
            400 if self.cfg.provider == Provider::OpenAi => {
                let param = err.param.as_str();
                if (param == "max_tokens" || lower.contains("max_completion_tokens"))
                    && body.get("max_tokens").is_some()
                {
                    Failure::Adapt(Adaptation::MaxCompletionTokens, message)
                } else if (param == "temperature" || lower.contains("temperature"))
                    && (lower.contains("unsupported")
                        || lower.contains("not support")
                        || lower.contains("only the default"))
                    && body.get("temperature").is_some()
                {
                    Failure::Adapt(Adaptation::DropTemperature, message)
                } else {
                    Failure::Fatal(ModelError::Rejected { status, message })
                }
            }
            _ => Failure::Fatal(ModelError::Rejected { status, message }),
        }
    }

    /// Reads a 2xx body.
    fn parse_success(&self, text: &str) -> Result<ChatReply, ModelError> {
        let key = self.cfg.api_key.as_ref().map(|k| k.expose());
        let expected = match self.cfg.provider {
            Provider::OpenAi => "an OpenAI-compatible chat-completions API (…/v1)",
            Provider::Anthropic => "the Anthropic Messages API (https://api.anthropic.com)",
        };
        let bad = |detail: String| ModelError::BadReply {
            detail,
            excerpt: redact_key(&excerpt(text, EXCERPT_CHARS), key),
            expected: expected.to_string(),
        };
        match self.cfg.provider {
            Provider::OpenAi => {
                let r: OaReply = serde_json::from_str(text)
                    .map_err(|e| bad(format!("not a chat-completions JSON object: {e}")))?;
                let choice = r
                    .choices
                    .into_iter()
                    .next()
                    .ok_or_else(|| bad("`choices` is empty".into()))?;
                let content = match choice.message.content {
                    Some(Value::String(s)) => s,
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join(""),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => {
                        return Err(bad(format!(
                            "`choices[0].message.content` is a {}, not text",
                            json_kind(&other)
                        )));
                    }
                };
                let tool_call = choice.message.tool_calls.iter().flatten().find_map(|c| {
                    let f = c.get("function")?;
                    let name = f.get("name")?.as_str()?.to_string();
                    let args = match f.get("arguments") {
                        Some(Value::String(s)) => {
                            serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                        }
                        Some(v) => v.clone(),
                        None => Value::Null,
                    };
                    Some((name, args))
                });
                let finish = match choice.finish_reason.as_deref() {
                    Some("length") => Finish::Length,
                    Some("content_filter") => Finish::Filtered,
                    _ => Finish::Complete,
                };
                let usage = r.usage.unwrap_or_default();
                Ok(ChatReply {
                    text: content,
                    tool_call,
                    refusal: choice.message.refusal.filter(|r| !r.trim().is_empty()),
                    finish,
                    usage: TokenUsage {
                        input_tokens: usage.prompt_tokens.unwrap_or(0),
                        output_tokens: usage.completion_tokens.unwrap_or(0),
                    },
                    reasoning_tokens: usage
                        .completion_tokens_details
                        .and_then(|d| d.get("reasoning_tokens").and_then(Value::as_u64))
                        .unwrap_or(0),
                    model: r.model.unwrap_or_else(|| self.cfg.model.clone()),
                    ..ChatReply::default()
                })
            }
            Provider::Anthropic => {
                let r: AnReply = serde_json::from_str(text)
                    .map_err(|e| bad(format!("not a Messages API JSON object: {e}")))?;
                let content: String = r
                    .content
                    .iter()
                    .filter(|b| b.kind == "text")
                    .filter_map(|b| b.text.as_deref())
                    .collect::<Vec<_>>()
                    .join("");
                let tool_call = r.content.iter().find(|b| b.kind == "tool_use").map(|b| {
                    (
                        b.name.clone().unwrap_or_default(),
                        b.input.clone().unwrap_or(Value::Null),
                    )
                });
                let (finish, refusal) = match r.stop_reason.as_deref() {
                    Some("max_tokens") | Some("model_context_window_exceeded") => {
                        (Finish::Length, None)
                    }
                    Some("refusal") => (
                        Finish::Filtered,
                        Some("the model declined (stop_reason: refusal)".to_string()),
                    ),
                    _ => (Finish::Complete, None),
                };
                let u = r.usage.unwrap_or_default();
                Ok(ChatReply {
                    text: content,
                    tool_call,
                    refusal,
                    finish,
                    usage: TokenUsage {
                        input_tokens: u.input_tokens
                            + u.cache_creation_input_tokens.unwrap_or(0)
                            + u.cache_read_input_tokens.unwrap_or(0),
                        output_tokens: u.output_tokens,
                    },
                    model: r.model.unwrap_or_else(|| self.cfg.model.clone()),
                    ..ChatReply::default()
                })
            }
        }
    }
}

/// True when an error message says tools are not supported (Ollama "does
/// not support tools", llama.cpp "--jinja", vLLM "--enable-auto-tool-choice",
/// OpenRouter "No endpoints found that support tool use").
fn mentions_no_tools(lower: &str) -> bool {
    lower.contains("tool")
        && (lower.contains("not support")
            || lower.contains("unsupported")
            || lower.contains("support tool")
            || lower.contains("--jinja")
            || lower.contains("enable-auto-tool-choice")
            || lower.contains("not allowed")
            || lower.contains("unknown"))
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

/// Full-jitter-ish exponential backoff: `base·2^n`, capped, times 0.5–1.0.
fn backoff(retry: u32) -> Duration {
    let exp = BACKOFF_BASE.saturating_mul(1u32 << retry.min(10));
    let capped = exp.min(BACKOFF_CAP);
    capped.mul_f64(rand::random_range(0.5..=1.0))
}

/// Reads `retry-after-ms`, then `retry-after` (seconds or an HTTP date).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let v = headers.get("retry-after")?.to_str().ok()?.trim();
    parse_retry_after(v, chrono::Utc::now())
}

/// Parses a `Retry-After` value: delay seconds or an HTTP date (relative to `now`).
fn parse_retry_after(v: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e6)));
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - now;
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

fn transport_failure(e: &reqwest::Error, key: Option<&str>) -> Failure {
    // reqwest errors carry the URL, never headers; redact anyway in case
    // someone put the key into the base URL.
    let detail = redact_key(&error_chain(e), key);
    if e.is_timeout() {
        Failure::Timeout
    } else if e.is_connect() || e.is_request() || e.is_body() {
        Failure::Connect(detail)
    } else if e.is_decode() {
        Failure::Fatal(ModelError::BadReply {
            detail,
            excerpt: String::new(),
            expected: "a JSON reply".into(),
        })
    } else {
        Failure::Connect(detail)
    }
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

/// An error body, read leniently.
#[derive(Debug, Default)]
struct ErrorInfo {
    /// The provider's message (with its type prefixed when given).
    message: String,
    /// `error.type`.
    kind: String,
    /// `error.code` as text.
    code: String,
    /// `error.param`.
    param: String,
    /// A numeric `error.code` that is an HTTP status (OpenRouter).
    code_status: Option<u16>,
}

/// The provider's error from a body: `error.message` (OpenAI, Anthropic,
/// OpenRouter), `error` as a string (Ollama), a top-level `message`, or an
/// excerpt of the text.
fn error_info(body: &str) -> ErrorInfo {
    let mut info = ErrorInfo::default();
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        let msg = match v.get("error") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(e) => {
                info.kind = text(e.get("type"));
                info.code = text(e.get("code"));
                info.param = text(e.get("param"));
                info.code_status = e
                    .get("code")
                    .and_then(Value::as_u64)
                    .and_then(|c| u16::try_from(c).ok())
                    .filter(|c| (400..600).contains(c));
                let m = e.get("message").and_then(Value::as_str);
                // OpenRouter puts the upstream provider's own words in metadata.raw.
                let raw = e
                    .pointer("/metadata/raw")
                    .and_then(Value::as_str)
                    .map(|r| format!(" ({})", excerpt(r, 300)))
                    .unwrap_or_default();
                match (info.kind.as_str(), m) {
                    ("", Some(m)) => Some(format!("{m}{raw}")),
                    (t, Some(m)) => Some(format!("{t}: {m}{raw}")),
                    _ => None,
                }
            }
            None => v.get("message").and_then(Value::as_str).map(str::to_string),
        };
        if let Some(m) = msg {
            info.message = excerpt(&m, 500);
            return info;
        }
    }
    let t = body.trim();
    info.message = if t.is_empty() {
        "empty body".into()
    } else {
        excerpt(t, EXCERPT_CHARS)
    };
    info
}

/// The error of a 2xx body that carries `{"error": ...}` instead of a reply
/// (OpenRouter), or a choice that ended in an error (`finish_reason: error`).
fn error_in_success(body: &str) -> Option<ErrorInfo> {
    let v: Value = serde_json::from_str(body).ok()?;
    if v.get("error").is_some_and(|e| !e.is_null())
        && v.get("choices").is_none()
        && v.get("content").is_none()
    {
        return Some(error_info(body));
    }
    let choice = v.get("choices")?.get(0)?;
    let failed = choice.get("finish_reason").and_then(Value::as_str) == Some("error");
    let err = choice.get("error").filter(|e| !e.is_null());
    if !failed && err.is_none() {
        return None;
    }
    let mut info = err
        .map(|e| error_info(&json!({"error": e}).to_string()))
        .unwrap_or_default();
    if info.message.is_empty() {
        info.message = "the provider ended the reply with an error (finish_reason: error)".into();
    }
    info.code_status = info.code_status.or(Some(502));
    Some(info)
}

/// At most `max` characters of `s`, with `…` when cut.
pub(crate) fn excerpt(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[derive(Deserialize)]
struct OaReply {
    model: Option<String>,
    choices: Vec<OaChoice>,
    usage: Option<OaUsage>,
}

#[derive(Deserialize)]
struct OaChoice {
    message: OaMessage,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct OaMessage {
    content: Option<Value>,
    refusal: Option<String>,
    tool_calls: Option<Vec<Value>>,
}

#[derive(Deserialize, Default)]
struct OaUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    completion_tokens_details: Option<Value>,
}

#[derive(Deserialize)]
struct AnReply {
    model: Option<String>,
    content: Vec<AnBlock>,
    stop_reason: Option<String>,
    usage: Option<AnUsage>,
}

#[derive(Deserialize)]
struct AnBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    name: Option<String>,
    input: Option<Value>,
}

#[derive(Deserialize, Default)]
struct AnUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = chrono::DateTime::parse_from_rfc2822("Wed, 21 Oct 2015 07:28:00 GMT")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("1", now), Some(Duration::from_secs(1)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:07 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn backoff_grows_and_is_capped_with_jitter() {
        for _ in 0..20 {
            let d0 = backoff(0);
            assert!(d0 >= Duration::from_millis(250) && d0 <= Duration::from_millis(500));
            let d3 = backoff(3);
            assert!(d3 >= Duration::from_secs(2) && d3 <= Duration::from_secs(4));
            assert!(backoff(30) <= BACKOFF_CAP);
        }
    }

    #[test]
    fn error_messages_come_from_both_providers_bodies() {
        let error_message = |b: &str| error_info(b).message;
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#),
            "invalid_request_error: bad key"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            ),
            "authentication_error: invalid x-api-key"
        );
        assert_eq!(
            error_message(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(error_message("<html>502</html>"), "<html>502</html>");
        assert_eq!(error_message(""), "empty body");
        let or = error_info(
            r#"{"error":{"code":429,"message":"Provider returned error","metadata":{"raw":"upstream busy","provider_name":"X"}}}"#,
        );
        assert_eq!(or.code_status, Some(429));
        assert_eq!(or.message, "Provider returned error (upstream busy)");
    }
}
