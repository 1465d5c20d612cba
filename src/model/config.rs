//! Model configuration from flags and environment variables.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::ModelError;

/// Environment variable naming the provider (`openai` or `anthropic`).
const ENV_PROVIDER: &str = "COMPUTE_BOT_PROVIDER";
/// Environment variable with the API base URL.
const ENV_BASE_URL: &str = "COMPUTE_BOT_BASE_URL";
/// Environment variable with the model name.
const ENV_MODEL: &str = "COMPUTE_BOT_MODEL";
/// Environment variable with the API key (takes precedence over the provider's own variable).
pub(crate) const ENV_API_KEY: &str = "COMPUTE_BOT_API_KEY";
/// Environment variable with the per-request timeout (`60s`, `1500ms`).
const ENV_TIMEOUT: &str = "COMPUTE_BOT_MODEL_TIMEOUT";
/// Environment variable with the default completion budget in tokens.
const ENV_MAX_TOKENS: &str = "COMPUTE_BOT_MAX_TOKENS";
/// Environment variable with the sampling temperature.
const ENV_TEMPERATURE: &str = "COMPUTE_BOT_TEMPERATURE";
/// Environment variable with the number of retries after the first request.
const ENV_RETRIES: &str = "COMPUTE_BOT_MODEL_RETRIES";
/// Environment variable with the total time retries may take (`120s`, `5m`).
const ENV_RETRY_TIME: &str = "COMPUTE_BOT_MODEL_RETRY_TIME";

/// The default completion budget of ordinary models.
const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The default completion budget of reasoning models, whose hidden
/// reasoning tokens count against it.
pub const DEFAULT_REASONING_MAX_TOKENS: u32 = 16_384;

/// True for OpenAI's reasoning families (o1, o3, o4, gpt-5), which take
/// `max_completion_tokens` and only the default temperature. The name may
/// carry a router prefix (`openai/o3-mini`).
pub(crate) fn is_openai_reasoning_model(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    ["o1", "o3", "o4", "gpt-5"].iter().any(|p| {
        name == *p || name.starts_with(&format!("{p}-")) || name.starts_with(&format!("{p}."))
    })
}

/// True for models that reason before they answer (OpenAI's reasoning
/// families, DeepSeek R1, QwQ, names saying `reasoning`/`thinking`): they
/// get the larger default budget.
pub(crate) fn is_reasoning_model(model: &str) -> bool {
    let lower = model.to_ascii_lowercase();
    is_openai_reasoning_model(model)
        || ["deepseek-r1", "qwq", "reasoning", "thinking", "-r1"]
            .iter()
            .any(|k| lower.contains(k))
}

/// What to tell a user who gave a goal but configured no model: both ways forward.
pub const NO_MODEL_HELP: &str = "no language model is configured, so the code for this goal cannot be \
generated. Either configure a model — set COMPUTE_BOT_MODEL (e.g. `gpt-4o-mini`), \
COMPUTE_BOT_API_KEY, and if needed COMPUTE_BOT_PROVIDER (`openai` or `anthropic`) and \
COMPUTE_BOT_BASE_URL (any OpenAI-compatible endpoint, e.g. `http://localhost:11434/v1` for Ollama) — \
or pass the code yourself with --code FILE or as a ```python block in the goal.";

/// Which wire format the model endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI chat completions, or any compatible endpoint (Azure OpenAI,
    /// Ollama, vLLM, llama.cpp server, OpenRouter).
    OpenAi,
    /// The Anthropic Messages API.
    Anthropic,
}

impl Provider {
    /// The name used in configuration (`openai`, `anthropic`).
    fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The provider's own API-key variable, read when `COMPUTE_BOT_API_KEY` is unset.
    pub fn key_var(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The base URL used when none is configured.
    fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
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
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" | "open-ai" | "openai-compatible" => Ok(Provider::OpenAi),
            "anthropic" => Ok(Provider::Anthropic),
            other => Err(ModelError::Config(format!(
                "unknown model provider `{other}`; set {ENV_PROVIDER} (or --provider) to `openai` \
                 (any OpenAI-compatible endpoint) or `anthropic`"
            ))),
        }
    }
}

pub use crate::secret::Secret;
pub(crate) use crate::secret::redact_key;

/// Values given on the command line; each one wins over its environment variable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelOverrides {
    /// `--provider`.
    pub provider: Option<Provider>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--api-key` (prefer the environment: flags show up in process lists).
    pub api_key: Option<Secret>,
    /// `--model-timeout`.
    pub timeout: Option<Duration>,
    /// `--max-tokens`.
    pub max_tokens: Option<u32>,
    /// `--temperature`.
    pub temperature: Option<f32>,
    /// Retries after the first request (`COMPUTE_BOT_MODEL_RETRIES`).
    pub retries: Option<u32>,
    /// Total time retries may take (`COMPUTE_BOT_MODEL_RETRY_TIME`).
    pub retry_time: Option<Duration>,
}

/// Where configuration values come from. The process environment in
/// production ([`ProcessEnv`]); a map in tests, so they never mutate the
/// process environment.
pub trait Env {
    /// The value of `name`, if set.
    fn var(&self, name: &str) -> Option<String>;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

impl Env for HashMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

impl Env for BTreeMap<String, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

impl Env for [(&str, &str)] {
    fn var(&self, name: &str) -> Option<String> {
        self.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

impl<const N: usize> Env for [(&str, &str); N] {
    fn var(&self, name: &str) -> Option<String> {
        self.as_slice().var(name)
    }
}

/// Everything needed to talk to one model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// Wire format.
    pub provider: Provider,
    /// API base URL without a trailing slash (`https://api.openai.com/v1`,
    /// `https://api.anthropic.com`, `http://localhost:11434/v1`).
    pub base_url: String,
    /// Model name as the endpoint knows it.
    pub model: String,
    /// API key; `None` for endpoints that need none (a local Ollama).
    pub api_key: Option<Secret>,
    /// Deadline of one HTTP request.
    pub timeout: Duration,
    /// Completion budget when a request does not set its own (reasoning
    /// tokens count against it); a cut reply raises it up to 4×.
    pub max_tokens: u32,
    /// Sampling temperature.
    pub temperature: f32,
    /// Retries after the first request (429, 5xx, timeouts, connection errors).
    pub max_retries: u32,
    /// No retry starts (or waits) past this much time since the first request.
    pub max_retry_time: Duration,
}

impl ModelConfig {
    /// A configuration with the defaults (60 s timeout, 4096 tokens — 16384
    /// for reasoning models —, temperature 0, 4 retries within 120 s).
    pub fn new(
        provider: Provider,
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<Secret>,
    ) -> Self {
        let model = model.into();
        ModelConfig {
            provider,
            base_url: base_url.into(),
            max_tokens: if is_reasoning_model(&model) {
                DEFAULT_REASONING_MAX_TOKENS
            } else {
                DEFAULT_MAX_TOKENS
            },
            model,
            api_key,
            timeout: Duration::from_secs(60),
            temperature: 0.0,
            max_retries: 4,
            max_retry_time: Duration::from_secs(120),
        }
    }

    /// Reads the configuration from flags and the process environment.
    /// `Ok(None)` when no model is configured at all.
    pub(crate) fn from_env(overrides: &ModelOverrides) -> Result<Option<ModelConfig>, ModelError> {
        Self::from_env_with(overrides, &ProcessEnv)
    }

    /// Like [`ModelConfig::from_env`], reading variables from `env`.
    ///
    /// A model counts as configured when a provider, base URL, model or
    /// `COMPUTE_BOT_API_KEY` is given. The provider defaults to `openai`,
    /// or `anthropic` when only `ANTHROPIC_API_KEY` is set. The model name
    /// has no default: it must be given once anything else is.
    pub fn from_env_with(
        overrides: &ModelOverrides,
        env: &(impl Env + ?Sized),
    ) -> Result<Option<ModelConfig>, ModelError> {
        let get = |name: &str| env.var(name).filter(|v| !v.trim().is_empty());

        let provider = match (&overrides.provider, get(ENV_PROVIDER)) {
            (Some(p), _) => Some(*p),
            (None, Some(v)) => Some(v.parse::<Provider>()?),
            (None, None) => None,
        };
        let base_url = overrides
            .base_url
            .clone()
            .filter(|v| !v.trim().is_empty())
            .or_else(|| get(ENV_BASE_URL));
        let model = overrides
            .model
            .clone()
            .filter(|v| !v.trim().is_empty())
            .or_else(|| get(ENV_MODEL));
        let bot_key = overrides
            .api_key
            .clone()
            .filter(|k| !k.expose().trim().is_empty())
            .or_else(|| get(ENV_API_KEY).map(Secret::new));

        if provider.is_none() && base_url.is_none() && model.is_none() && bot_key.is_none() {
            return Ok(None);
        }

        let provider = provider.unwrap_or_else(|| {
            if get("OPENAI_API_KEY").is_none() && get("ANTHROPIC_API_KEY").is_some() {
                Provider::Anthropic
            } else {
                Provider::OpenAi
            }
        });
        let Some(model) = model else {
            return Err(ModelError::Config(format!(
                "a model provider is configured ({provider}) but no model name; set {ENV_MODEL} \
                 (or --model), e.g. `gpt-4o-mini` or `claude-sonnet-4-20250514`"
            )));
        };
        let base_url = normalize_base_url(
            provider,
            base_url.as_deref().unwrap_or(provider.default_base_url()),
        )?;
        // A provider's own key goes only to that provider's host; another
        // base URL needs COMPUTE_BOT_API_KEY.
        let provider_key = get(provider.key_var()).map(Secret::new).filter(|_| {
            let home = same_host(&base_url, provider.default_base_url());
            if !home {
                tracing::warn!(
                    variable = provider.key_var(),
                    base_url = %base_url,
                    "not sending the provider's key to another host; set COMPUTE_BOT_API_KEY for this endpoint"
                );
            }
            home
        });
        let api_key = bot_key.or(provider_key);

        let mut cfg = ModelConfig::new(provider, base_url, model.trim(), api_key);
        if let Some(t) = overrides.timeout {
            cfg.timeout = t;
        } else if let Some(v) = get(ENV_TIMEOUT) {
            cfg.timeout = crate::units::parse_duration(&v)
                .map_err(|e| ModelError::Config(format!("{ENV_TIMEOUT}: {e}")))?;
        }
        if let Some(n) = overrides.max_tokens {
            cfg.max_tokens = n;
        } else if let Some(v) = get(ENV_MAX_TOKENS) {
            cfg.max_tokens = v.trim().parse().map_err(|_| {
                ModelError::Config(format!(
                    "{ENV_MAX_TOKENS}=`{v}` is not a whole number; write e.g. `2000`"
                ))
            })?;
        }
        if let Some(t) = overrides.temperature {
            cfg.temperature = t;
        } else if let Some(v) = get(ENV_TEMPERATURE) {
            cfg.temperature = v.trim().parse().map_err(|_| {
                ModelError::Config(format!(
                    "{ENV_TEMPERATURE}=`{v}` is not a number; write e.g. `0` or `0.2`"
                ))
            })?;
        }
        if let Some(n) = overrides.retries {
            cfg.max_retries = n;
        } else if let Some(v) = get(ENV_RETRIES) {
            cfg.max_retries = v.trim().parse().map_err(|_| {
                ModelError::Config(format!(
                    "{ENV_RETRIES}=`{v}` is not a whole number; write e.g. `4` (0 turns retries off)"
                ))
            })?;
        }
        if let Some(t) = overrides.retry_time {
            cfg.max_retry_time = t;
        } else if let Some(v) = get(ENV_RETRY_TIME) {
            cfg.max_retry_time = crate::units::parse_duration(&v)
                .map_err(|e| ModelError::Config(format!("{ENV_RETRY_TIME}: {e}")))?;
        }
        cfg.check()?;
        Ok(Some(cfg))
    }

    /// Checks the values a provider would reject: a zero timeout or budget,
    /// a temperature outside the provider's range (OpenAI 0–2, Anthropic 0–1).
    pub(crate) fn check(&self) -> Result<(), ModelError> {
        if self.timeout.is_zero() {
            return Err(ModelError::Config(format!(
                "the model request timeout is zero; set {ENV_TIMEOUT} to e.g. `60s`"
            )));
        }
        if self.max_tokens == 0 {
            return Err(ModelError::Config(format!(
                "max tokens is zero; set {ENV_MAX_TOKENS} to e.g. `{DEFAULT_MAX_TOKENS}`"
            )));
        }
        let max_temperature = match self.provider {
            Provider::OpenAi => 2.0,
            Provider::Anthropic => 1.0,
        };
        if !(0.0..=max_temperature).contains(&self.temperature) {
            return Err(ModelError::Config(format!(
                "temperature {} is out of range for {}; set {ENV_TEMPERATURE} between 0 and {max_temperature}",
                self.temperature, self.provider
            )));
        }
        Ok(())
    }

    /// The environment variable that holds the key for this endpoint, as
    /// shown in error messages: `COMPUTE_BOT_API_KEY (or OPENAI_API_KEY)` for
    /// the provider's own host, `COMPUTE_BOT_API_KEY` alone for any other
    /// (the provider's key is never sent there).
    pub fn key_setting(&self) -> String {
        if same_host(&self.base_url, self.provider.default_base_url()) {
            format!("{ENV_API_KEY} (or {})", self.provider.key_var())
        } else {
            format!(
                "{ENV_API_KEY} ({} is only sent to {})",
                self.provider.key_var(),
                self.provider.default_base_url()
            )
        }
    }
}

/// True when both URLs name the same scheme, host and port.
fn same_host(a: &str, b: &str) -> bool {
    match (reqwest::Url::parse(a), reqwest::Url::parse(b)) {
        (Ok(a), Ok(b)) => {
            a.scheme() == b.scheme()
                && a.host_str().map(str::to_ascii_lowercase)
                    == b.host_str().map(str::to_ascii_lowercase)
                && a.port_or_known_default() == b.port_or_known_default()
        }
        _ => false,
    }
}

/// Checks a base URL and removes a trailing slash (and, for Anthropic, a
/// trailing `/v1`, since the client appends `/v1/messages`).
pub(crate) fn normalize_base_url(provider: Provider, url: &str) -> Result<String, ModelError> {
    let mut u = url.trim().trim_end_matches('/').to_string();
    let parsed = reqwest::Url::parse(&u).map_err(|e| {
        ModelError::Config(format!(
            "{ENV_BASE_URL}=`{u}` is not a URL ({e}); write e.g. `{}`",
            provider.default_base_url()
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ModelError::Config(format!(
            "{ENV_BASE_URL}=`{u}` must start with http:// or https://; write e.g. `{}`",
            provider.default_base_url()
        )));
    }
    if provider == Provider::Anthropic && u.ends_with("/v1") {
        u.truncate(u.len() - 3);
    }
    Ok(u)
}
