//! A loopback stand-in for model providers, for tests.
//!
//! It speaks the real wire formats — OpenAI chat completions
//! (`POST /v1/chat/completions`) and the Anthropic Messages API
//! (`POST /v1/messages`) — with their real reply shapes (`usage` included),
//! real error bodies and headers (`retry-after`, `x-request-id`,
//! `request-id`). It checks what a real endpoint checks (path, key header,
//! `anthropic-version`, required body fields) and answers those failures the
//! way the real API does, without consuming a scripted reply. Otherwise it
//! serves a scripted queue of replies in order, each with an optional delay,
//! and records every request it received.
//!
//! ```ignore
//! mod support;
//! use support::llm_standin::{LlmStandin, Reply};
//!
//! let llm = LlmStandin::openai().await;
//! llm.push(Reply::code("Sum the column.", "print('{\"total\": 3}')"));
//! let client = ModelClient::new(llm.config()).unwrap();
//! // ... run the loop ...
//! assert_eq!(llm.requests().len(), 1);
//! assert!(llm.requests()[0].system_prompt().unwrap().contains("No network"));
//! ```
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use compute_bot::model::{ModelConfig, Provider, Secret};
use serde_json::{Value, json};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The key the stand-in expects unless told otherwise; a canary that tests
/// look for in places it must never appear.
pub const CANARY_KEY: &str = "sk-canary-DO-NOT-LEAK-7f3a9c2e1b5d";

/// The model name the stand-in reports unless the request names one.
pub const DEFAULT_MODEL: &str = "standin-model-1";

/// What a scripted reply says.
#[derive(Debug, Clone)]
pub enum Script {
    /// A successful completion with this text and usage.
    Text {
        /// The assistant's text.
        text: String,
        /// Prompt tokens reported.
        input_tokens: u64,
        /// Completion tokens reported.
        output_tokens: u64,
    },
    /// HTTP 429 with the provider's rate-limit body and, if set, `retry-after`.
    RateLimited {
        /// The `retry-after` header value (seconds or an HTTP date).
        retry_after: Option<String>,
    },
    /// HTTP 500 with the provider's server-error body.
    ServerError,
    /// HTTP 529 `overloaded_error` (Anthropic) / 503 (OpenAI).
    Overloaded,
    /// HTTP 401 with the provider's authentication error (the masked key echoed, like OpenAI does).
    Unauthorized,
    /// HTTP 403 permission error.
    Forbidden,
    /// HTTP 404 for the requested model.
    ModelNotFound,
    /// Any status and body, sent as given.
    Raw {
        /// The HTTP status.
        status: u16,
        /// The body.
        body: String,
        /// The `content-type`.
        content_type: String,
    },
}

/// One scripted reply: what to say, extra headers, and how long to wait first.
#[derive(Debug, Clone)]
pub struct Reply {
    /// What to say.
    pub script: Script,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// Wait this long before answering (to trip client timeouts).
    pub delay: Option<Duration>,
}

impl Reply {
    fn new(script: Script) -> Self {
        Reply {
            script,
            headers: Vec::new(),
            delay: None,
        }
    }

    /// A successful completion with `text` (usage: 100 in, 20 out).
    pub fn text(text: impl Into<String>) -> Self {
        Reply::new(Script::Text {
            text: text.into(),
            input_tokens: 100,
            output_tokens: 20,
        })
    }

    /// A successful completion in the format the prompt asks for:
    /// `Plan:` then one ```python block.
    pub fn code(plan: &str, code: &str) -> Self {
        Reply::text(format!(
            "Plan:\n{plan}\n\n```python\n{}\n```\n",
            code.trim_end()
        ))
    }

    /// 429 with `retry-after: <secs>`.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Reply::new(Script::RateLimited {
            retry_after: Some(retry_after_secs.to_string()),
        })
    }

    /// 429 with a raw `retry-after` value (e.g. an HTTP date), or none.
    pub fn rate_limited_raw(retry_after: Option<&str>) -> Self {
        Reply::new(Script::RateLimited {
            retry_after: retry_after.map(str::to_string),
        })
    }

    /// 500 with the provider's server-error body.
    pub fn server_error() -> Self {
        Reply::new(Script::ServerError)
    }

    /// 529 (Anthropic) / 503 (OpenAI) overloaded.
    pub fn overloaded() -> Self {
        Reply::new(Script::Overloaded)
    }

    /// 401 with the provider's authentication-error body.
    pub fn unauthorized() -> Self {
        Reply::new(Script::Unauthorized)
    }

    /// 403 with the provider's permission-error body.
    pub fn forbidden() -> Self {
        Reply::new(Script::Forbidden)
    }

    /// 404 naming the requested model.
    pub fn model_not_found() -> Self {
        Reply::new(Script::ModelNotFound)
    }

    /// A 200 whose body is not the provider's JSON (an HTML proxy page).
    pub fn malformed() -> Self {
        Reply::raw(
            200,
            "<html><head><title>Gateway</title></head><body>Welcome to nginx!</body></html>",
            "text/html",
        )
    }

    /// Any status and body.
    pub fn raw(status: u16, body: impl Into<String>, content_type: &str) -> Self {
        Reply::new(Script::Raw {
            status,
            body: body.into(),
            content_type: content_type.to_string(),
        })
    }

    /// Sets the reported usage of a [`Reply::text`] / [`Reply::code`].
    pub fn with_usage(mut self, input: u64, output: u64) -> Self {
        if let Script::Text {
            input_tokens,
            output_tokens,
            ..
        } = &mut self.script
        {
            *input_tokens = input;
            *output_tokens = output;
        }
        self
    }

    /// Waits `d` before answering.
    pub fn with_delay(mut self, d: Duration) -> Self {
        self.delay = Some(d);
        self
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

/// One request the stand-in received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST`, ...
    pub method: String,
    /// The URL path (`/v1/chat/completions`).
    pub path: String,
    /// Headers, names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: String,
    /// The body as JSON, when it is JSON.
    pub json: Option<Value>,
    /// When it arrived.
    pub at: Instant,
}

impl Recorded {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The system prompt: `system` (Anthropic) or the first `system` message (OpenAI).
    pub fn system_prompt(&self) -> Option<String> {
        let j = self.json.as_ref()?;
        if let Some(s) = j.get("system").and_then(Value::as_str) {
            return Some(s.to_string());
        }
        j.get("messages")?
            .as_array()?
            .iter()
            .find(|m| m["role"] == "system")
            .and_then(|m| m["content"].as_str())
            .map(str::to_string)
    }

    /// The non-system messages as `(role, content)`.
    pub fn messages(&self) -> Vec<(String, String)> {
        let Some(msgs) = self
            .json
            .as_ref()
            .and_then(|j| j.get("messages"))
            .and_then(Value::as_array)
        else {
            return Vec::new();
        };
        msgs.iter()
            .filter(|m| m["role"] != "system")
            .map(|m| {
                (
                    m["role"].as_str().unwrap_or("").to_string(),
                    m["content"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// The `model` field of the body.
    pub fn model(&self) -> Option<String> {
        self.json
            .as_ref()?
            .get("model")?
            .as_str()
            .map(str::to_string)
    }

    /// Everything received except the key's own header, for leak checks.
    pub fn everything_but_auth(&self) -> String {
        let mut s = format!("{} {}\n", self.method, self.path);
        for (k, v) in &self.headers {
            if k != "authorization" && k != "x-api-key" {
                s.push_str(&format!("{k}: {v}\n"));
            }
        }
        s.push_str(&self.body);
        s
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Reply>,
    requests: Vec<Recorded>,
    served: usize,
}

struct Responder {
    provider: Provider,
    key: Option<String>,
    state: Arc<Mutex<State>>,
}

/// A running stand-in. Dropping it stops the server.
pub struct LlmStandin {
    server: MockServer,
    provider: Provider,
    key: Option<String>,
    state: Arc<Mutex<State>>,
}

impl LlmStandin {
    /// An OpenAI-compatible endpoint expecting [`CANARY_KEY`].
    pub async fn openai() -> Self {
        Self::start(Provider::OpenAi, Some(CANARY_KEY)).await
    }

    /// An Anthropic Messages endpoint expecting [`CANARY_KEY`].
    pub async fn anthropic() -> Self {
        Self::start(Provider::Anthropic, Some(CANARY_KEY)).await
    }

    /// A stand-in for `provider`; `key` is the only key it accepts (`None`:
    /// no key needed, like a local Ollama).
    pub async fn start(provider: Provider, key: Option<&str>) -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State::default()));
        let responder = Responder {
            provider,
            key: key.map(str::to_string),
            state: state.clone(),
        };
        Mock::given(any())
            .respond_with(responder)
            .mount(&server)
            .await;
        LlmStandin {
            server,
            provider,
            key: key.map(str::to_string),
            state,
        }
    }

    /// Queues a reply.
    pub fn push(&self, reply: Reply) -> &Self {
        self.state.lock().unwrap().queue.push_back(reply);
        self
    }

    /// Queues several replies.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) -> &Self {
        self.state.lock().unwrap().queue.extend(replies);
        self
    }

    /// The base URL to configure (`http://127.0.0.1:PORT/v1` for OpenAI,
    /// `http://127.0.0.1:PORT` for Anthropic).
    pub fn base_url(&self) -> String {
        match self.provider {
            Provider::OpenAi => format!("{}/v1", self.server.uri()),
            Provider::Anthropic => self.server.uri(),
        }
    }

    /// A model configuration pointing here, with the expected key and test
    /// friendly bounds (2 s timeout, 3 retries within 10 s).
    pub fn config(&self) -> ModelConfig {
        let mut cfg = ModelConfig::new(
            self.provider,
            self.base_url(),
            DEFAULT_MODEL,
            self.key.as_deref().map(Secret::new),
        );
        cfg.timeout = Duration::from_secs(2);
        cfg.max_retries = 3;
        cfg.max_retry_time = Duration::from_secs(10);
        cfg
    }

    /// The provider this stand-in imitates.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Scripted replies not served yet.
    pub fn remaining(&self) -> usize {
        self.state.lock().unwrap().queue.len()
    }

    /// Scripted replies served so far.
    pub fn served(&self) -> usize {
        self.state.lock().unwrap().served
    }
}

impl Respond for Responder {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&req.body).to_string();
        let json: Option<Value> = serde_json::from_str(&body).ok();
        let rec = Recorded {
            method: req.method.to_string(),
            path: req.url.path().to_string(),
            headers: req
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_ascii_lowercase(),
                        String::from_utf8_lossy(v.as_bytes()).to_string(),
                    )
                })
                .collect(),
            body,
            json: json.clone(),
            at: Instant::now(),
        };
        let model = rec.model().unwrap_or_else(|| DEFAULT_MODEL.to_string());
        let mut state = self.state.lock().unwrap();
        state.requests.push(rec.clone());
        let n = state.requests.len();

        if let Some(t) = self.check_request(&rec, json.as_ref(), n) {
            return t;
        }
        let Some(reply) = state.queue.pop_front() else {
            return self.error(
                400,
                "invalid_request_error",
                &format!("llm stand-in: no scripted reply left for request #{n}"),
                n,
            );
        };
        state.served += 1;
        drop(state);
        let mut t = self.render(&reply.script, &model, &rec, n);
        for (k, v) in &reply.headers {
            t = t.insert_header(k.as_str(), v.as_str());
        }
        if let Some(d) = reply.delay {
            t = t.set_delay(d);
        }
        t
    }
}

impl Responder {
    /// What a real endpoint rejects before any model runs.
    fn check_request(
        &self,
        rec: &Recorded,
        json: Option<&Value>,
        n: usize,
    ) -> Option<ResponseTemplate> {
        let expected_path = match self.provider {
            Provider::OpenAi => "/v1/chat/completions",
            Provider::Anthropic => "/v1/messages",
        };
        if rec.method != "POST" || rec.path != expected_path {
            let msg = match self.provider {
                Provider::OpenAi => format!("Invalid URL ({} {})", rec.method, rec.path),
                Provider::Anthropic => "Not Found".to_string(),
            };
            return Some(self.error(404, "not_found_error", &msg, n));
        }
        if let Some(key) = &self.key {
            let given = match self.provider {
                Provider::OpenAi => rec
                    .header("authorization")
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .map(str::to_string),
                Provider::Anthropic => rec.header("x-api-key").map(str::to_string),
            };
            if given.as_deref() != Some(key.as_str()) {
                return Some(self.unauthorized(given.as_deref(), n));
            }
        }
        if self.provider == Provider::Anthropic && rec.header("anthropic-version").is_none() {
            return Some(self.error(
                400,
                "invalid_request_error",
                "anthropic-version: header is required",
                n,
            ));
        }
        let Some(j) = json else {
            return Some(self.error(
                400,
                "invalid_request_error",
                "We could not parse the JSON body of your request.",
                n,
            ));
        };
        let mut required = vec!["model", "messages"];
        if self.provider == Provider::Anthropic {
            required.push("max_tokens");
        }
        for field in required {
            if j.get(field).is_none() {
                return Some(self.error(
                    400,
                    "invalid_request_error",
                    &format!("{field}: Field required"),
                    n,
                ));
            }
        }
        None
    }

    fn unauthorized(&self, given: Option<&str>, n: usize) -> ResponseTemplate {
        match self.provider {
            Provider::OpenAi => {
                let msg = match given {
                    // OpenAI echoes the key, partly masked.
                    Some(k) if k.len() > 8 => format!(
                        "Incorrect API key provided: {}{}{}. You can find your API key at https://platform.openai.com/account/api-keys.",
                        &k[..8],
                        "*".repeat(k.len().saturating_sub(12)),
                        &k[k.len() - 4..]
                    ),
                    Some(k) => format!("Incorrect API key provided: {k}."),
                    None => "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).".to_string(),
                };
                ResponseTemplate::new(401)
                    .insert_header("x-request-id", format!("req_{n:08}").as_str())
                    .set_body_raw(
                        json!({"error": {"message": msg, "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})
                            .to_string(),
                        "application/json",
                    )
            }
            Provider::Anthropic => self.error(401, "authentication_error", "invalid x-api-key", n),
        }
    }

    /// An error body in the provider's format.
    fn error(&self, status: u16, kind: &str, message: &str, n: usize) -> ResponseTemplate {
        match self.provider {
            Provider::OpenAi => {
                let code = match status {
                    404 if message.contains("does not exist") => json!("model_not_found"),
                    429 => json!("rate_limit_exceeded"),
                    _ => Value::Null,
                };
                let kind = match kind {
                    "not_found_error" | "authentication_error" | "permission_error" => {
                        "invalid_request_error"
                    }
                    "rate_limit_error" => "requests",
                    "api_error" | "overloaded_error" => "server_error",
                    k => k,
                };
                ResponseTemplate::new(status)
                    .insert_header("x-request-id", format!("req_{n:08}").as_str())
                    .set_body_raw(
                        json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
                            .to_string(),
                        "application/json",
                    )
            }
            Provider::Anthropic => ResponseTemplate::new(status)
                .insert_header("request-id", format!("req_011CStandin{n:06}").as_str())
                .set_body_raw(
                    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": format!("req_011CStandin{n:06}")})
                        .to_string(),
                    "application/json",
                ),
        }
    }

    fn render(&self, script: &Script, model: &str, rec: &Recorded, n: usize) -> ResponseTemplate {
        match script {
            Script::Text {
                text,
                input_tokens,
                output_tokens,
            } => self.success(text, *input_tokens, *output_tokens, model, n),
            Script::RateLimited { retry_after } => {
                let msg = match self.provider {
                    Provider::OpenAi => format!(
                        "Rate limit reached for {model} in organization org-standin on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s."
                    ),
                    Provider::Anthropic => "Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.".to_string(),
                };
                let mut t = self.error(429, "rate_limit_error", &msg, n);
                if let Some(ra) = retry_after {
                    t = t.insert_header("retry-after", ra.as_str());
                }
                match self.provider {
                    Provider::OpenAi => t
                        .insert_header("x-ratelimit-limit-requests", "3")
                        .insert_header("x-ratelimit-remaining-requests", "0")
                        .insert_header("x-ratelimit-reset-requests", "1s"),
                    Provider::Anthropic => t
                        .insert_header("anthropic-ratelimit-requests-limit", "50")
                        .insert_header("anthropic-ratelimit-requests-remaining", "0"),
                }
            }
            Script::ServerError => match self.provider {
                Provider::OpenAi => self.error(
                    500,
                    "server_error",
                    "The server had an error while processing your request. Sorry about that!",
                    n,
                ),
                Provider::Anthropic => self.error(500, "api_error", "Internal server error", n),
            },
            Script::Overloaded => match self.provider {
                Provider::OpenAi => self.error(
                    503,
                    "server_error",
                    "The engine is currently overloaded, please try again later.",
                    n,
                ),
                Provider::Anthropic => self.error(529, "overloaded_error", "Overloaded", n),
            },
            Script::Unauthorized => {
                let given = match self.provider {
                    Provider::OpenAi => rec
                        .header("authorization")
                        .and_then(|v| v.strip_prefix("Bearer ")),
                    Provider::Anthropic => rec.header("x-api-key"),
                };
                self.unauthorized(given, n)
            }
            Script::Forbidden => self.error(
                403,
                "permission_error",
                "Your API key does not have permission to use the specified resource.",
                n,
            ),
            Script::ModelNotFound => match self.provider {
                Provider::OpenAi => self.error(
                    404,
                    "invalid_request_error",
                    &format!("The model `{model}` does not exist or you do not have access to it."),
                    n,
                ),
                Provider::Anthropic => {
                    self.error(404, "not_found_error", &format!("model: {model}"), n)
                }
            },
            Script::Raw {
                status,
                body,
                content_type,
            } => ResponseTemplate::new(*status).set_body_raw(body.clone(), content_type),
        }
    }

    fn success(
        &self,
        text: &str,
        input: u64,
        output: u64,
        model: &str,
        n: usize,
    ) -> ResponseTemplate {
        match self.provider {
            Provider::OpenAi => ResponseTemplate::new(200)
                .insert_header("x-request-id", format!("req_{n:08}").as_str())
                .insert_header("openai-processing-ms", "42")
                .set_body_raw(
                    json!({
                        "id": format!("chatcmpl-standin{n}"),
                        "object": "chat.completion",
                        "created": 1_764_400_000u64 + n as u64,
                        "model": model,
                        "choices": [{
                            "index": 0,
                            "message": {"role": "assistant", "content": text, "refusal": null, "annotations": []},
                            "logprobs": null,
                            "finish_reason": "stop"
                        }],
                        "usage": {
                            "prompt_tokens": input,
                            "completion_tokens": output,
                            "total_tokens": input + output,
                            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
                        },
                        "service_tier": "default",
                        "system_fingerprint": "fp_standin"
                    })
                    .to_string(),
                    "application/json",
                ),
            Provider::Anthropic => ResponseTemplate::new(200)
                .insert_header("request-id", format!("req_011CStandin{n:06}").as_str())
                .set_body_raw(
                    json!({
                        "id": format!("msg_01Standin{n:06}"),
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [{"type": "text", "text": text}],
                        "stop_reason": "end_turn",
                        "stop_sequence": null,
                        "usage": {
                            "input_tokens": input,
                            "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0,
                            "output_tokens": output,
                            "service_tier": "standard"
                        }
                    })
                    .to_string(),
                    "application/json",
                ),
        }
    }
}
