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
    /// A forced `run_python` tool call (OpenAI `tool_calls`, Anthropic `tool_use`).
    ToolCall {
        /// The tool's name.
        name: String,
        /// The `plan` argument.
        plan: String,
        /// The `code` argument.
        code: String,
    },
    /// A reply cut at the token budget (`finish_reason: length` /
    /// `stop_reason: max_tokens`), with this much text (may be empty: the
    /// reasoning used the budget up) and these reasoning tokens.
    Cut {
        /// The text written before the cut.
        text: String,
        /// Reasoning tokens reported.
        reasoning_tokens: u64,
    },
    /// A whole `run_python` call in a reply cut at the budget
    /// (`finish_reason: length` / `stop_reason: max_tokens`).
    CutToolCall {
        /// The `plan` argument.
        plan: String,
        /// The `code` argument.
        code: String,
    },
    /// A refusal (OpenAI `message.refusal`, Anthropic `stop_reason: refusal`).
    Refusal(String),
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
    /// Leave `usage` out of a 200 reply (as some OpenAI-compatible servers do).
    pub without_usage: bool,
}

impl Reply {
    fn new(script: Script) -> Self {
        Reply {
            script,
            headers: Vec::new(),
            delay: None,
            without_usage: false,
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

    /// A forced `run_python` call with `plan` and `code`.
    pub fn tool_call(plan: &str, code: &str) -> Self {
        Reply::named_tool_call("run_python", plan, code)
    }

    /// A call of tool `name` with `plan` and `code`.
    pub fn named_tool_call(name: &str, plan: &str, code: &str) -> Self {
        Reply::new(Script::ToolCall {
            name: name.into(),
            plan: plan.into(),
            code: code.into(),
        })
    }

    /// A reply cut at the budget after `text`, having spent `reasoning` tokens thinking.
    pub fn cut(text: &str, reasoning: u64) -> Self {
        Reply::new(Script::Cut {
            text: text.into(),
            reasoning_tokens: reasoning,
        })
    }

    /// A `run_python` call with `plan` and `code` whose reply was cut at
    /// the budget all the same.
    pub fn cut_tool_call(plan: &str, code: &str) -> Self {
        Reply::new(Script::CutToolCall {
            plan: plan.into(),
            code: code.into(),
        })
    }

    /// A refusal with this message.
    pub fn refusal(message: &str) -> Self {
        Reply::new(Script::Refusal(message.into()))
    }

    /// HTTP 200 carrying an OpenRouter error body (`{"error": {"code", "message", "metadata"}}`).
    pub fn error_in_200(code: u16, message: &str) -> Self {
        Reply::raw(
            200,
            json!({"error": {"code": code, "message": message, "metadata": {"provider_name": "StandinUpstream", "raw": "upstream said no"}}}).to_string(),
            "application/json",
        )
    }

    /// OpenAI's 429 `insufficient_quota` (billing, not a rate limit).
    pub fn insufficient_quota() -> Self {
        Reply::raw(
            429,
            json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}).to_string(),
            "application/json",
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

    /// Sends a 200 reply without its `usage` object.
    pub fn without_usage(mut self) -> Self {
        self.without_usage = true;
        self
    }

    /// Anthropic's monthly spend cap: HTTP 429 `rate_limit_error` with
    /// `error.details.error_code: enforced_spend_limit_reached` and no
    /// `retry-after` (billing, not a rate limit).
    pub fn spend_limit_reached() -> Self {
        Reply::raw(
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Your organization has reached its monthly usage limit. Usage resumes on the first day of next month.", "details": {"error_code": "enforced_spend_limit_reached"}}, "request_id": "req_011CStandinSpend"}).to_string(),
            "application/json",
        )
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

/// The shape of a 200 reply.
struct Shape {
    text: String,
    tool: Option<(String, Value)>,
    refusal: Option<String>,
    finish_cut: bool,
    input: u64,
    output: u64,
    reasoning: u64,
}

impl Shape {
    fn text(t: &str) -> Self {
        Shape {
            text: t.to_string(),
            tool: None,
            refusal: None,
            finish_cut: false,
            input: 100,
            output: 20,
            reasoning: 0,
        }
    }
}

/// One request the stand-in received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST`, ...
    pub method: String,
    /// The URL path (`/v1/chat/completions`).
    pub path: String,
    /// The query string, if any (`api-version=2024-10-21`).
    pub query: Option<String>,
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
            if k != "authorization" && k != "x-api-key" && k != "api-key" {
                s.push_str(&format!("{k}: {v}\n"));
            }
        }
        s.push_str(&self.body);
        s
    }
}

/// How the endpoint behaves beyond the scripted replies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mode {
    /// Like OpenAI's reasoning models: 400 on `max_tokens` (use
    /// `max_completion_tokens`) and on any `temperature` but 1.
    pub reasoning: bool,
    /// Like an endpoint without tool support (Ollama with a model that has
    /// no tool template): 400 when the body has `tools`.
    pub no_tools: bool,
    /// Azure OpenAI routes and the `api-key` header.
    pub azure: Option<Azure>,
}

/// The Azure OpenAI form served.
#[derive(Debug, Clone, PartialEq)]
pub enum Azure {
    /// `/openai/deployments/<name>/chat/completions?api-version=...`.
    Deployment(String),
    /// `/openai/v1/chat/completions` (no api-version).
    V1,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Reply>,
    requests: Vec<Recorded>,
    served: usize,
    mode: Mode,
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

    /// Sets how the endpoint behaves (reasoning model, no tools, Azure routes).
    pub fn set_mode(&self, mode: Mode) -> &Self {
        self.state.lock().unwrap().mode = mode;
        self
    }

    /// The server's root URL (`http://127.0.0.1:PORT`).
    pub fn root(&self) -> String {
        self.server.uri()
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
            query: req.url.query().map(str::to_string),
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

        let mode = state.mode.clone();
        if let Some(t) = self.check_request(&rec, json.as_ref(), n, &mode) {
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
        let mut t = self.render(&reply.script, &model, &rec, n, !reply.without_usage);
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
        mode: &Mode,
    ) -> Option<ResponseTemplate> {
        let expected_path = match (&mode.azure, self.provider) {
            (Some(Azure::Deployment(d)), _) => format!("/openai/deployments/{d}/chat/completions"),
            (Some(Azure::V1), _) => "/openai/v1/chat/completions".to_string(),
            (None, Provider::OpenAi) => "/v1/chat/completions".to_string(),
            (None, Provider::Anthropic) => "/v1/messages".to_string(),
        };
        if let Some(Azure::Deployment(_)) = &mode.azure {
            let has_version = rec.query.as_deref().is_some_and(|q| {
                q.split('&')
                    .any(|p| p.starts_with("api-version=") && p.len() > 12)
            });
            if !has_version {
                // Azure's answer to a request without api-version.
                return Some(ResponseTemplate::new(404).set_body_raw(
                    json!({"error": {"code": "404", "message": "Resource not found"}}).to_string(),
                    "application/json",
                ));
            }
        }
        if let Some(key) = self.key.as_ref().filter(|_| mode.azure.is_some())
            && rec.header("api-key") != Some(key.as_str())
        {
            return Some(ResponseTemplate::new(401).set_body_raw(
                json!({"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}).to_string(),
                "application/json",
            ));
        }
        if rec.method != "POST" || rec.path != expected_path {
            let msg = match self.provider {
                Provider::OpenAi => format!("Invalid URL ({} {})", rec.method, rec.path),
                Provider::Anthropic => "Not Found".to_string(),
            };
            return Some(self.error(404, "not_found_error", &msg, n));
        }
        if let Some(key) = self.key.as_ref().filter(|_| mode.azure.is_none()) {
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
        if mode.reasoning && j.get("max_tokens").is_some() {
            return Some(self.error_param(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                "max_tokens",
                "unsupported_parameter",
                n,
            ));
        }
        if mode.reasoning
            && j.get("temperature")
                .is_some_and(|t| t.as_f64() != Some(1.0))
        {
            let t = j["temperature"].to_string();
            return Some(self.error_param(
                400,
                &format!("Unsupported value: 'temperature' does not support {t} with this model. Only the default (1) value is supported."),
                "temperature",
                "unsupported_value",
                n,
            ));
        }
        if mode.no_tools && j.get("tools").is_some() {
            let model = j
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or(DEFAULT_MODEL);
            return Some(ResponseTemplate::new(400).set_body_raw(
                json!({"error": {"message": format!("registry.ollama.ai/library/{model}:latest does not support tools"), "type": "api_error", "param": null, "code": null}}).to_string(),
                "application/json",
            ));
        }
        None
    }

    /// An OpenAI 400 naming the parameter, as for reasoning models.
    fn error_param(
        &self,
        status: u16,
        message: &str,
        param: &str,
        code: &str,
        n: usize,
    ) -> ResponseTemplate {
        ResponseTemplate::new(status)
            .insert_header("x-request-id", format!("req_{n:08}").as_str())
            .set_body_raw(
                json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}).to_string(),
                "application/json",
            )
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

    fn render(
        &self,
        script: &Script,
        model: &str,
        rec: &Recorded,
        n: usize,
        usage: bool,
    ) -> ResponseTemplate {
        match script {
            Script::Text {
                text,
                input_tokens,
                output_tokens,
            } => self.reply_body(
                Shape {
                    input: *input_tokens,
                    output: *output_tokens,
                    ..Shape::text(text)
                },
                model,
                n,
                usage,
            ),
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
            Script::ToolCall { name, plan, code } => {
                let args = json!({"plan": plan, "code": code});
                self.reply_body(
                    Shape {
                        tool: Some((name.clone(), args)),
                        ..Shape::text("")
                    },
                    model,
                    n,
                    usage,
                )
            }
            Script::Cut {
                text,
                reasoning_tokens,
            } => self.reply_body(
                Shape {
                    finish_cut: true,
                    reasoning: *reasoning_tokens,
                    output: reasoning_tokens + (text.len() as u64 / 4),
                    ..Shape::text(text)
                },
                model,
                n,
                usage,
            ),
            Script::CutToolCall { plan, code } => self.reply_body(
                Shape {
                    tool: Some(("run_python".into(), json!({"plan": plan, "code": code}))),
                    finish_cut: true,
                    ..Shape::text("")
                },
                model,
                n,
                usage,
            ),
            Script::Refusal(message) => self.reply_body(
                Shape {
                    refusal: Some(message.clone()),
                    ..Shape::text("")
                },
                model,
                n,
                usage,
            ),
            Script::Raw {
                status,
                body,
                content_type,
            } => ResponseTemplate::new(*status).set_body_raw(body.clone(), content_type),
        }
    }

    /// A 200 reply of any shape in the provider's format (without `usage`
    /// unless `usage`).
    fn reply_body(&self, s: Shape, model: &str, n: usize, usage: bool) -> ResponseTemplate {
        let mut body = match self.provider {
            Provider::OpenAi => {
                let tool_calls = s.tool.as_ref().map(|(name, args)| {
                    json!([{"id": format!("call_standin{n}"), "type": "function",
                        "function": {"name": name, "arguments": args.to_string()}}])
                });
                let finish = if s.finish_cut { "length" } else { "stop" };
                let content = if s.text.is_empty()
                    && (s.tool.is_some() || s.refusal.is_some() || s.finish_cut)
                {
                    if s.finish_cut { json!("") } else { Value::Null }
                } else {
                    json!(s.text)
                };
                json!({
                    "id": format!("chatcmpl-standin{n}"),
                    "object": "chat.completion",
                    "created": 1_764_400_000u64 + n as u64,
                    "model": model,
                    "choices": [{
                        "index": 0,
                        "message": {"role": "assistant", "content": content, "refusal": s.refusal, "tool_calls": tool_calls, "annotations": []},
                        "logprobs": null,
                        "finish_reason": finish
                    }],
                    "usage": {
                        "prompt_tokens": s.input,
                        "completion_tokens": s.output,
                        "total_tokens": s.input + s.output,
                        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                        "completion_tokens_details": {"reasoning_tokens": s.reasoning, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
                    },
                    "service_tier": "default",
                    "system_fingerprint": "fp_standin"
                })
            }
            Provider::Anthropic => {
                let mut content = Vec::new();
                if !s.text.is_empty() {
                    content.push(json!({"type": "text", "text": s.text}));
                }
                if let Some((name, args)) = &s.tool {
                    content.push(json!({"type": "tool_use", "id": format!("toolu_01Standin{n:06}"), "name": name, "input": args}));
                }
                let stop = if s.finish_cut {
                    "max_tokens"
                } else if s.refusal.is_some() {
                    "refusal"
                } else if s.tool.is_some() {
                    "tool_use"
                } else {
                    "end_turn"
                };
                json!({
                    "id": format!("msg_01Standin{n:06}"),
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": null,
                    "usage": {
                        "input_tokens": s.input,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": s.output,
                        "service_tier": "standard"
                    }
                })
            }
        };
        if !usage && let Some(m) = body.as_object_mut() {
            m.remove("usage");
        }
        let t = ResponseTemplate::new(200);
        let t = match self.provider {
            Provider::OpenAi => t
                .insert_header("x-request-id", format!("req_{n:08}").as_str())
                .insert_header("openai-processing-ms", "42"),
            Provider::Anthropic => {
                t.insert_header("request-id", format!("req_011CStandin{n:06}").as_str())
            }
        };
        t.set_body_raw(body.to_string(), "application/json")
    }
}
