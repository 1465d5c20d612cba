//! The HTTP client for both wire formats, with bounded retries.

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use super::config::redact_key;
use super::{ModelConfig, ModelError, Provider, TokenUsage};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The caller (prompt, repair notes).
    User,
    /// The model (earlier replies).
    Assistant,
}

impl Role {
    /// The wire name (`user`, `assistant`), the same for both providers.
    pub fn as_str(self) -> &'static str {
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
    pub role: Role,
    /// The text.
    pub content: String,
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
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A provider-neutral chat request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatRequest {
    /// The system prompt (the first message for OpenAI, top-level `system` for Anthropic).
    pub system: String,
    /// The conversation, starting with a user message.
    pub messages: Vec<Message>,
    /// Completion budget; the configured `max_tokens` when `None`.
    pub max_tokens: Option<u32>,
}

/// The model's answer to one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatReply {
    /// The text of the answer (all text parts joined).
    pub text: String,
    /// Tokens used by this call.
    pub usage: TokenUsage,
    /// The model that answered, as reported by the endpoint (or the configured name).
    pub model: String,
}

/// Talks to one configured model. Cheap to clone.
#[derive(Clone)]
pub struct ModelClient {
    cfg: ModelConfig,
    http: reqwest::Client,
    url: String,
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
    /// 429, 408 or 5xx: worth another try.
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

/// Request changes some OpenAI models demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adaptation {
    /// `max_tokens` → `max_completion_tokens`.
    MaxCompletionTokens,
    /// Drop `temperature` (only the default is supported).
    DropTemperature,
}

const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(20);
const EXCERPT_CHARS: usize = 200;
/// Most bytes of a reply body read; the rest is dropped.
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

impl ModelClient {
    /// Builds the HTTP client; fails on an invalid base URL or key.
    pub fn new(cfg: ModelConfig) -> Result<ModelClient, ModelError> {
        let base = super::config::normalize_base_url(cfg.provider, &cfg.base_url)?;
        let url = match cfg.provider {
            Provider::OpenAi => format!("{base}/chat/completions"),
            Provider::Anthropic => format!("{base}/v1/messages"),
        };
        if cfg.timeout.is_zero() {
            return Err(ModelError::Config(
                "the model request timeout is zero; set COMPUTE_BOT_MODEL_TIMEOUT to e.g. `60s`"
                    .into(),
            ));
        }
        let mut headers = HeaderMap::new();
        if let Some(key) = &cfg.api_key {
            let bad_key = || {
                ModelError::Config(format!(
                    "the API key contains characters that cannot go into an HTTP header; check {}",
                    cfg.key_setting()
                ))
            };
            let (name, value) = match cfg.provider {
                Provider::OpenAi => ("authorization", format!("Bearer {}", key.expose())),
                Provider::Anthropic => ("x-api-key", key.expose().to_string()),
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
            // Never follow redirects: x-api-key would travel to the new host.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(ModelClient { cfg, http, url })
    }

    /// The configuration this client uses.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> &str {
        &self.url
    }

    /// Sends `req` and returns the model's text. Retries 429, 408, 5xx,
    /// timeouts and connection errors with exponential backoff and jitter
    /// (or the server's `Retry-After`), at most `max_retries` times and
    /// never waiting past `max_retry_time` since the first request. The
    /// whole call therefore takes at most about `max_retry_time + timeout`.
    /// 401/403, 404, other 4xx, redirects and malformed replies are not
    /// retried. Usage is that of the successful request.
    pub async fn complete(&self, req: &ChatRequest) -> Result<ChatReply, ModelError> {
        let mut body = self.body(req);
        let start = Instant::now();
        let mut attempts: u32 = 0;
        let mut retries: u32 = 0;
        let mut adapted: Vec<Adaptation> = Vec::new();
        loop {
            attempts += 1;
            tracing::debug!(
                provider = %self.cfg.provider,
                url = %self.url,
                model = %self.cfg.model,
                attempt = attempts,
                "model request"
            );
            let failure = match self.send_once(&body).await {
                Ok(reply) => {
                    tracing::debug!(
                        attempt = attempts,
                        input_tokens = reply.usage.input_tokens,
                        output_tokens = reply.usage.output_tokens,
                        elapsed_ms = start.elapsed().as_millis() as u64,
                        "model reply"
                    );
                    return Ok(reply);
                }
                Err(f) => f,
            };
            let (final_err, retry_after) = match failure {
                Failure::Fatal(e) => return Err(e),
                Failure::Adapt(a, _) if !adapted.contains(&a) => {
                    tracing::info!(?a, "the endpoint asked for a different parameter; adapting");
                    adapted.push(a);
                    apply(&mut body, a);
                    continue;
                }
                Failure::Adapt(_, message) => {
                    return Err(ModelError::Rejected {
                        status: 400,
                        message,
                    });
                }
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
            };
            if retries >= self.cfg.max_retries {
                tracing::warn!(attempts, "model request failed; no retries left");
                return Err(final_err);
            }
            let delay = retry_after.unwrap_or_else(|| backoff(retries));
            let elapsed = start.elapsed();
            if elapsed + delay > self.cfg.max_retry_time {
                tracing::warn!(
                    attempts,
                    delay_ms = delay.as_millis() as u64,
                    budget_ms = self.cfg.max_retry_time.as_millis() as u64,
                    "model request failed; waiting again would exceed the retry time budget"
                );
                return Err(final_err);
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

    /// The JSON body for `req` in this provider's format.
    fn body(&self, req: &ChatRequest) -> Value {
        let max_tokens = req.max_tokens.unwrap_or(self.cfg.max_tokens);
        let msgs = req
            .messages
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": m.content}));
        match self.cfg.provider {
            Provider::OpenAi => {
                let mut messages = Vec::with_capacity(req.messages.len() + 1);
                if !req.system.is_empty() {
                    messages.push(json!({"role": "system", "content": req.system}));
                }
                messages.extend(msgs);
                json!({
                    "model": self.cfg.model,
                    "messages": messages,
                    "max_tokens": max_tokens,
                    "temperature": self.cfg.temperature,
                })
            }
            Provider::Anthropic => {
                let mut body = json!({
                    "model": self.cfg.model,
                    "max_tokens": max_tokens,
                    "messages": msgs.collect::<Vec<_>>(),
                    "temperature": self.cfg.temperature,
                });
                if !req.system.is_empty() {
                    body["system"] = Value::String(req.system.clone());
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
            return self.parse_success(&text).map_err(Failure::Fatal);
        }
        let message = redact_key(&error_message(&text), key);
        tracing::debug!(status, %message, "model endpoint returned an error");
        match status {
            401 | 403 => Err(Failure::Fatal(ModelError::Auth {
                status,
                message,
                setting: self.cfg.key_setting(),
                base_url: self.cfg.base_url.clone(),
            })),
            404 => Err(Failure::Fatal(ModelError::NotFound {
                model: self.cfg.model.clone(),
                url: self.url.clone(),
                message,
            })),
            408 | 425 | 429 | 500..=599 => Err(Failure::Status {
                status,
                message,
                retry_after,
            }),
            400 if self.cfg.provider == Provider::OpenAi => {
                let lower = message.to_ascii_lowercase();
                if lower.contains("max_completion_tokens") {
                    Err(Failure::Adapt(Adaptation::MaxCompletionTokens, message))
                } else if lower.contains("temperature") && lower.contains("unsupported") {
                    Err(Failure::Adapt(Adaptation::DropTemperature, message))
                } else {
                    Err(Failure::Fatal(ModelError::Rejected { status, message }))
                }
            }
            _ => Err(Failure::Fatal(ModelError::Rejected { status, message })),
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
                if content.trim().is_empty() {
                    let why = choice
                        .message
                        .refusal
                        .map(|r| format!("the model refused: {}", excerpt(&r, 300)))
                        .unwrap_or_else(|| {
                            format!(
                                "empty reply (finish_reason: {})",
                                choice.finish_reason.as_deref().unwrap_or("none")
                            )
                        });
                    return Err(ModelError::Empty(why));
                }
                if choice.finish_reason.as_deref() == Some("length") {
                    tracing::warn!("the model reply was cut at max_tokens");
                }
                let usage = r.usage.unwrap_or_default();
                Ok(ChatReply {
                    text: content,
                    usage: TokenUsage {
                        input_tokens: usage.prompt_tokens.unwrap_or(0),
                        output_tokens: usage.completion_tokens.unwrap_or(0),
                    },
                    model: r.model.unwrap_or_else(|| self.cfg.model.clone()),
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
                if content.trim().is_empty() {
                    return Err(ModelError::Empty(format!(
                        "empty reply (stop_reason: {})",
                        r.stop_reason.as_deref().unwrap_or("none")
                    )));
                }
                if r.stop_reason.as_deref() == Some("max_tokens") {
                    tracing::warn!("the model reply was cut at max_tokens");
                }
                let u = r.usage.unwrap_or_default();
                Ok(ChatReply {
                    text: content,
                    usage: TokenUsage {
                        input_tokens: u.input_tokens
                            + u.cache_creation_input_tokens.unwrap_or(0)
                            + u.cache_read_input_tokens.unwrap_or(0),
                        output_tokens: u.output_tokens,
                    },
                    model: r.model.unwrap_or_else(|| self.cfg.model.clone()),
                })
            }
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

fn apply(body: &mut Value, a: Adaptation) {
    let Some(obj) = body.as_object_mut() else {
        return;
    };
    match a {
        Adaptation::MaxCompletionTokens => {
            if let Some(n) = obj.remove("max_tokens") {
                obj.insert("max_completion_tokens".into(), n);
            }
        }
        Adaptation::DropTemperature => {
            obj.remove("temperature");
        }
    }
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
pub(crate) fn parse_retry_after(v: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
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

/// The provider's message from an error body (`error.message` for both
/// OpenAI and Anthropic, `error` as a string for Ollama), else an excerpt.
fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let msg = match v.get("error") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(e) => {
                let m = e.get("message").and_then(Value::as_str);
                let t = e.get("type").and_then(Value::as_str);
                match (t, m) {
                    (Some(t), Some(m)) => Some(format!("{t}: {m}")),
                    (None, Some(m)) => Some(m.to_string()),
                    _ => None,
                }
            }
            None => v.get("message").and_then(Value::as_str).map(str::to_string),
        };
        if let Some(m) = msg {
            return excerpt(&m, 500);
        }
    }
    let t = body.trim();
    if t.is_empty() {
        "empty body".into()
    } else {
        excerpt(t, EXCERPT_CHARS)
    }
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
}

#[derive(Deserialize, Default)]
struct OaUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
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
    }
}
