//! Model configuration from flags and environment variables.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::{ModelError, Provider};

/// The variables that choose one model: the first model or the fallback.
/// Everything else (timeout, budget, temperature, retries) is shared.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Vars {
    /// How messages name this model (`model`, `fallback model`).
    pub(crate) label: &'static str,
    /// The provider (`openai` or `anthropic`).
    pub(crate) provider: &'static str,
    /// The API base URL.
    pub(crate) base_url: &'static str,
    /// The model name.
    pub(crate) model: &'static str,
    /// The API key, sent to whatever base URL is configured (takes
    /// precedence over the provider's own variable).
    pub(crate) api_key: &'static str,
    /// True when command-line flags (`--provider`, `--model`) also set these values.
    pub(crate) flags: bool,
}

/// The first model's variables.
pub(crate) static FIRST: Vars = Vars {
    label: "model",
    provider: "COMPUTE_BOT_PROVIDER",
    base_url: "COMPUTE_BOT_BASE_URL",
    model: "COMPUTE_BOT_MODEL",
    api_key: "COMPUTE_BOT_API_KEY",
    flags: true,
};

/// The fallback model's variables: it answers when the first model is
/// unavailable ([`ModelError::calls_for_fallback`]).
pub(crate) static FALLBACK: Vars = Vars {
    label: "fallback model",
    provider: "COMPUTE_BOT_FALLBACK_PROVIDER",
    base_url: "COMPUTE_BOT_FALLBACK_BASE_URL",
    model: "COMPUTE_BOT_FALLBACK_MODEL",
    api_key: "COMPUTE_BOT_FALLBACK_API_KEY",
    flags: false,
};

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

/// Every variable that may hold a model API key (for masking in a log):
/// both compute-bot key variables and every provider's own.
pub fn key_variables() -> impl Iterator<Item = &'static str> {
    [FIRST.api_key, FALLBACK.api_key]
        .into_iter()
        .chain(Provider::all().map(Provider::key_var))
}

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

pub use compute_bot_secret::Secret;
pub(crate) use compute_bot_secret::redact_key;

/// Values given on the command line (or as action inputs); each one wins
/// over its environment variable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelOverrides {
    /// The first model: `--provider`, `--base-url`, `--model` (the action's
    /// `provider`, `base_url`, `model`, `api_key`).
    pub first: ModelChoice,
    /// The fallback model (the action's `fallback_*` inputs); each value
    /// wins over its `COMPUTE_BOT_FALLBACK_*` variable.
    pub fallback: ModelChoice,
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

/// One model as given outside the environment (flags, action inputs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelChoice {
    /// The provider.
    pub provider: Option<Provider>,
    /// The API base URL.
    pub base_url: Option<String>,
    /// The model name.
    pub model: Option<String>,
    /// The key, sent only to this model's base URL (prefer the environment
    /// or a secret: flags show up in process lists).
    pub api_key: Option<Secret>,
}

/// Which model, as given: any value set means the model is configured.
struct Given {
    provider: Option<Provider>,
    base_url: Option<String>,
    model: Option<String>,
    key: Option<Secret>,
}

impl Given {
    /// The values of `vars`, flags first; `None` when none is set.
    fn read(
        vars: &Vars,
        flags: &ModelChoice,
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Given>, ModelError> {
        let provider = match (&flags.provider, get(vars.provider)) {
            (Some(p), _) => Some(*p),
            (None, Some(v)) => Some(v.parse::<Provider>().map_err(|_| {
                ModelError::Config(format!(
                    "{}=`{}` is not a model provider; set it{} to {}",
                    vars.provider,
                    v.trim(),
                    if vars.flags { " (or --provider)" } else { "" },
                    Provider::choices()
                ))
            })?),
            (None, None) => None,
        };
        let text = |flag: &Option<String>, var: &str| {
            flag.clone()
                .filter(|v| !v.trim().is_empty())
                .or_else(|| get(var))
        };
        let given = Given {
            provider,
            base_url: text(&flags.base_url, vars.base_url),
            model: text(&flags.model, vars.model),
            key: flags
                .api_key
                .clone()
                .filter(|k| !k.expose().trim().is_empty())
                .or_else(|| get(vars.api_key).map(Secret::new)),
        };
        let any = given.provider.is_some()
            || given.base_url.is_some()
            || given.model.is_some()
            || given.key.is_some();
        Ok(any.then_some(given))
    }

    /// The configuration of this model: `provider` when none is given, the
    /// provider's public API when no base URL is, and the provider's own key
    /// only for that API's host.
    fn resolve(
        self,
        vars: &'static Vars,
        provider: Provider,
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ModelConfig, ModelError> {
        let provider = self.provider.unwrap_or(provider);
        let Some(model) = self.model else {
            return Err(ModelError::Config(format!(
                "a {} provider is configured ({provider}) but no model name; set {}{}, e.g. \
                 `gpt-4o-mini` or `claude-sonnet-4-20250514`",
                vars.label,
                vars.model,
                if vars.flags { " (or --model)" } else { "" },
            )));
        };
        let base_url = normalize_base_url(
            provider,
            self.base_url
                .as_deref()
                .unwrap_or(provider.default_base_url()),
            vars,
        )?;
        // A provider's own key goes only to that provider's host; another
        // base URL needs the compute-bot key variable of this model.
        let provider_key = get(provider.key_var()).map(Secret::new).filter(|_| {
            let home = same_host(&base_url, provider.default_base_url());
            if !home {
                tracing::warn!(
                    variable = provider.key_var(),
                    base_url = %base_url,
                    "not sending the provider's key to another host; set {} for this endpoint",
                    vars.api_key
                );
            }
            home
        });
        let mut cfg = ModelConfig::new(provider, base_url, model.trim(), self.key.or(provider_key));
        cfg.vars = vars;
        Ok(cfg)
    }
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

/// Everything needed to talk to one model (and its fallback, if any).
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
    /// The model that answers when this one is unavailable after its
    /// retries ([`ModelError::calls_for_fallback`]), with its own key and
    /// host. `None`: no fallback, nothing changes.
    pub fallback: Option<Box<ModelConfig>>,
    /// The variables that chose this model, named in its error messages.
    pub(crate) vars: &'static Vars,
}

impl ModelConfig {
    /// A configuration with the defaults (60 s timeout, 4096 tokens — 16384
    /// for reasoning models —, temperature 0, 4 retries within 120 s, no
    /// fallback).
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
            fallback: None,
            vars: &FIRST,
        }
    }

    /// Reads the configuration from flags and the process environment.
    /// `Ok(None)` when no model is configured at all.
    pub fn from_env(overrides: &ModelOverrides) -> Result<Option<ModelConfig>, ModelError> {
        Self::from_env_with(overrides, &ProcessEnv)
    }

    /// Like [`ModelConfig::from_env`], reading variables from `env`.
    ///
    /// A model counts as configured when a provider, base URL, model or
    /// `COMPUTE_BOT_API_KEY` is given. The provider defaults to `openai`,
    /// or to the provider whose own key variable (`ANTHROPIC_API_KEY`) is
    /// the only one set. The model name has no default: it must be given
    /// once anything else is. A fallback is configured the same way by the
    /// `COMPUTE_BOT_FALLBACK_*` variables (or [`ModelOverrides::fallback`]);
    /// its provider defaults to the first model's, its base URL to its
    /// provider's public API, and its key is only
    /// `COMPUTE_BOT_FALLBACK_API_KEY` (or its provider's own variable for
    /// that provider's host) — never the first model's. The timeout,
    /// budget, temperature and retry settings apply to both.
    pub fn from_env_with(
        overrides: &ModelOverrides,
        env: &(impl Env + ?Sized),
    ) -> Result<Option<ModelConfig>, ModelError> {
        let get = |name: &str| env.var(name).filter(|v| !v.trim().is_empty());
        let first = Given::read(&FIRST, &overrides.first, &get)?;
        let fallback = Given::read(&FALLBACK, &overrides.fallback, &get)?;
        let Some(first) = first else {
            if fallback.is_some() {
                return Err(ModelError::Config(format!(
                    "a fallback model is configured but no first model; set {} (and {}, {} as \
                     needed), or remove the {} settings",
                    FIRST.model, FIRST.provider, FIRST.api_key, FALLBACK.label
                )));
            }
            return Ok(None);
        };
        let with_own_key: Vec<Provider> = Provider::all()
            .filter(|p| get(p.key_var()).is_some())
            .collect();
        let provider = match with_own_key.as_slice() {
            [only] => *only,
            _ => Provider::default_choice(),
        };
        let mut cfg = first.resolve(&FIRST, provider, &get)?;
        let mut fallback = fallback
            .map(|f| f.resolve(&FALLBACK, cfg.provider, &get))
            .transpose()?;
        for c in std::iter::once(&mut cfg).chain(fallback.as_mut()) {
            c.shared_settings(overrides, &get)?;
            c.check()?;
        }
        cfg.fallback = fallback.map(Box::new);
        Ok(Some(cfg))
    }

    /// Reads the settings both models share: timeout, budget, temperature, retries.
    fn shared_settings(
        &mut self,
        overrides: &ModelOverrides,
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), ModelError> {
        let cfg = self;
        if let Some(t) = overrides.timeout {
            cfg.timeout = t;
        } else if let Some(v) = get(ENV_TIMEOUT) {
            cfg.timeout = compute_bot_units::parse_duration(&v)
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
            cfg.max_retry_time = compute_bot_units::parse_duration(&v)
                .map_err(|e| ModelError::Config(format!("{ENV_RETRY_TIME}: {e}")))?;
        }
        Ok(())
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
        let max_temperature = self.provider.api().max_temperature();
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
    /// (the provider's key is never sent there); `COMPUTE_BOT_FALLBACK_API_KEY`
    /// for the fallback model.
    pub fn key_setting(&self) -> String {
        let var = self.vars.api_key;
        if same_host(&self.base_url, self.provider.default_base_url()) {
            format!("{var} (or {})", self.provider.key_var())
        } else {
            format!(
                "{var} ({} is only sent to {})",
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

/// Checks a base URL and removes a trailing slash (and what the provider
/// drops, e.g. Anthropic's trailing `/v1`); errors name `vars.base_url`.
pub(crate) fn normalize_base_url(
    provider: Provider,
    url: &str,
    vars: &Vars,
) -> Result<String, ModelError> {
    let u = url.trim().trim_end_matches('/').to_string();
    let var = vars.base_url;
    let parsed = reqwest::Url::parse(&u).map_err(|e| {
        ModelError::Config(format!(
            "{var}=`{u}` is not a URL ({e}); write e.g. `{}`",
            provider.default_base_url()
        ))
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ModelError::Config(format!(
            "{var}=`{u}` must start with http:// or https://; write e.g. `{}`",
            provider.default_base_url()
        )));
    }
    Ok(provider.api().normalize_base_url(u))
}
