//! The providers, each declared once. [`Provider`] names them; each one's
//! [`Api`] is everything that differs between them: its name and key
//! variable, its default host, the URL and headers of a request, the request
//! body and the reading of a reply. Adding a provider is one variant, one
//! arm in [`Provider::api`] and one file implementing [`Api`] (plus its
//! stand-in in `tests/support/llm_standin.rs`); nothing else matches on
//! providers.

mod anthropic;
mod openai;

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::ModelError;
use super::error_body::ErrorInfo;
use super::reply::ChatReply;
use super::request::ChatRequest;

pub use openai::AZURE_DEFAULT_API_VERSION;

/// Which provider's API a model is reached through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI chat completions, or any compatible endpoint (Azure OpenAI,
    /// Ollama, vLLM, llama.cpp server, OpenRouter).
    OpenAi,
    /// The Anthropic Messages API.
    Anthropic,
}

impl Provider {
    /// Every provider, in the order messages list them; the first is the
    /// default.
    const ALL: [Provider; 2] = [Provider::OpenAi, Provider::Anthropic];

    /// The provider's wire format and settings.
    pub(crate) fn api(self) -> &'static dyn Api {
        match self {
            Provider::OpenAi => &openai::OpenAi,
            Provider::Anthropic => &anthropic::Anthropic,
        }
    }

    /// Every provider.
    pub(crate) fn all() -> impl Iterator<Item = Provider> {
        Self::ALL.into_iter()
    }

    /// The provider used when none is named and no provider's own key
    /// variable points at another.
    pub(crate) fn default_choice() -> Provider {
        Self::ALL[0]
    }

    /// The name used in configuration and records (`openai`, `anthropic`).
    pub fn as_str(self) -> &'static str {
        self.api().name()
    }

    /// The provider's own API-key variable (`OPENAI_API_KEY`), read when no
    /// compute-bot key is set and the base URL is the provider's own host.
    pub fn key_var(self) -> &'static str {
        self.api().key_var()
    }

    /// The base URL used when none is configured.
    pub(crate) fn default_base_url(self) -> &'static str {
        self.api().default_base_url()
    }

    /// The accepted values, for messages: "`openai` (any OpenAI-compatible
    /// endpoint) or `anthropic`".
    pub fn choices() -> String {
        let names: Vec<String> = Self::all()
            .map(|p| match p.api().note() {
                "" => format!("`{}`", p.as_str()),
                note => format!("`{}` ({note})", p.as_str()),
            })
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Provider {
    type Err = ModelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase();
        Self::all()
            .find(|p| p.as_str() == wanted || p.api().aliases().contains(&wanted.as_str()))
            .ok_or_else(|| {
                ModelError::Config(format!(
                    "unknown model provider `{wanted}`; use {}",
                    Provider::choices()
                ))
            })
    }
}

/// How the key travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI and compatible).
    Bearer,
    /// The key alone in this header (`api-key` for Azure OpenAI,
    /// `x-api-key` for Anthropic).
    Named(&'static str),
}

/// Where requests go and what they carry besides the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    /// The URL of every request.
    pub(crate) url: String,
    /// How the key is sent.
    pub(crate) key: KeyHeader,
    /// Fixed headers the API requires (`anthropic-version`).
    pub(crate) headers: &'static [(&'static str, &'static str)],
}

/// What an endpoint accepts, learned from its replies (or known from the
/// model name) and remembered by the client and its clones.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Learned {
    /// Send `max_completion_tokens` instead of `max_tokens`.
    pub(crate) completion_tokens: bool,
    /// Leave `temperature` out (only the default is accepted).
    pub(crate) no_temperature: bool,
    /// The endpoint does not do tools: ask in plain text.
    pub(crate) no_tools: bool,
    /// A budget raised after a cut reply.
    pub(crate) budget: Option<u32>,
}

/// Request changes some endpoints demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Adaptation {
    /// `max_tokens` → `max_completion_tokens` (OpenAI reasoning models).
    MaxCompletionTokens,
    /// Drop `temperature` (only the default is supported).
    DropTemperature,
    /// The endpoint or model does not do tools.
    NoTools,
}

impl Adaptation {
    /// Remembers the change.
    pub(crate) fn apply(self, learned: &mut Learned) {
        match self {
            Adaptation::MaxCompletionTokens => learned.completion_tokens = true,
            Adaptation::DropTemperature => learned.no_temperature = true,
            Adaptation::NoTools => learned.no_tools = true,
        }
    }
}

/// What a request body is built from besides the request itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    /// The model name as the endpoint knows it.
    pub(crate) model: &'a str,
    /// Sampling temperature.
    pub(crate) temperature: f32,
    /// The completion budget of this request.
    pub(crate) budget: u32,
    /// What the endpoint is known to accept.
    pub(crate) learned: &'a Learned,
}

/// One provider: its settings and its wire format.
pub(crate) trait Api: Sync {
    /// The name in configuration and records (`openai`).
    fn name(&self) -> &'static str;
    /// Other names accepted in configuration.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// A few words after the name in messages (`any OpenAI-compatible endpoint`).
    fn note(&self) -> &'static str {
        ""
    }
    /// The provider's own key variable (`OPENAI_API_KEY`).
    fn key_var(&self) -> &'static str;
    /// The public API's base URL.
    fn default_base_url(&self) -> &'static str;
    /// The highest temperature the API takes (the lowest is 0).
    fn max_temperature(&self) -> f32;
    /// The API a malformed reply should have come from, for messages.
    fn expected(&self) -> &'static str;
    /// A checked base URL without its trailing slash, in the form
    /// [`Api::route`] expects (Anthropic drops a trailing `/v1`).
    fn normalize_base_url(&self, base: String) -> String {
        base
    }
    /// The URL and headers of requests to `base`.
    fn route(&self, base: &str) -> Result<Route, ModelError>;
    /// What the endpoint is known to want before its first reply.
    fn known(&self, _model: &str, _route: &Route) -> Learned {
        Learned::default()
    }
    /// The JSON body of `req`.
    fn body(&self, req: &ChatRequest, call: Call<'_>) -> Value;
    /// A change of the request a 400 asks for (beyond tools, which every
    /// provider handles alike); `lower` is the error's type, code and
    /// message in lower case.
    fn adaptation(&self, _err: &ErrorInfo, _lower: &str, _body: &Value) -> Option<Adaptation> {
        None
    }
    /// Reads a 2xx body: the reply without `answered_by`, `max_tokens` and
    /// `requests` (the client fills those in), or what is wrong with it.
    fn parse(&self, text: &str) -> Result<ChatReply, String>;
}

/// The JSON type of a value, for messages.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_list_every_provider() {
        for p in Provider::all() {
            assert_eq!(p.as_str().parse::<Provider>().unwrap(), p);
            assert!(Provider::choices().contains(&format!("`{p}`")));
        }
        assert_eq!(
            " OpenAI-Compatible ".parse::<Provider>().unwrap(),
            Provider::OpenAi
        );
        let e = "gemini".parse::<Provider>().unwrap_err().to_string();
        assert!(e.contains("`gemini`") && e.contains("`anthropic`"), "{e}");
        assert_eq!(Provider::default_choice(), Provider::OpenAi);
    }
}
