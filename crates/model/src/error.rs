//! Errors of model configuration and model calls. Every message says what
//! to change, and none ever contains the API key.

use std::time::Duration;

use super::ModelId;

/// Why a model could not be configured or did not answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The configuration is incomplete or invalid.
    #[error("model configuration: {0}")]
    Config(String),

    /// The provider refused the credentials (HTTP 401 or 403).
    #[error(
        "the model provider refused the API key (HTTP {status}: {message}); set {setting} to a valid key for {base_url}"
    )]
    Auth {
        /// 401 or 403.
        status: u16,
        /// The provider's message (key redacted).
        message: String,
        /// The variable(s) to fix.
        setting: String,
        /// The endpoint that refused.
        base_url: String,
    },

    /// The endpoint or the model does not exist (HTTP 404).
    #[error(
        "model `{model}` or endpoint {url} was not found (HTTP 404: {message}); check {model_var} (the model name) and {url_var} (the API base URL)"
    )]
    NotFound {
        /// The model asked for.
        model: String,
        /// The URL requested.
        url: String,
        /// The provider's message.
        message: String,
        /// The variable naming the model (`COMPUTE_BOT_MODEL`).
        model_var: &'static str,
        /// The variable naming the base URL (`COMPUTE_BOT_BASE_URL`).
        url_var: &'static str,
    },

    /// The provider rejected the request (another 4xx).
    #[error(
        "the model provider rejected the request (HTTP {status}: {message}); {}",
        rejected_hint(message)
    )]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },

    /// The account is out of credit or quota (`insufficient_quota`, HTTP 402,
    /// a too-low credit balance). Never retried: waiting does not fix billing.
    #[error(
        "the model provider refused for billing or quota reasons (HTTP {status}: {message}); this is not temporary: add credit or raise the quota of the account behind the API key, or configure another key or model"
    )]
    Quota {
        /// The HTTP status (429, 402, 400, or the `code` of an error body sent with 200).
        status: u16,
        /// The provider's message.
        message: String,
    },

    /// 429 or 5xx on every attempt, or a Retry-After beyond the retry budget.
    #[error(
        "the model provider is unavailable (HTTP {status}: {message}) after {attempts} attempt(s) in {:.1}s{}; try again later, or raise the retry budget (COMPUTE_BOT_MODEL_RETRIES, COMPUTE_BOT_MODEL_RETRY_TIME)", elapsed.as_secs_f64(), asked(retry_after)
    )]
    Unavailable {
        /// The last HTTP status.
        status: u16,
        /// The provider's last message.
        message: String,
        /// Requests made.
        attempts: u32,
        /// Time spent, waits included.
        elapsed: Duration,
        /// What the server asked for (`Retry-After`) on the last reply, if anything.
        retry_after: Option<Duration>,
    },

    /// No reply within the request timeout on every attempt.
    #[error(
        "the model did not reply within {:.1}s ({attempts} attempt(s)); raise COMPUTE_BOT_MODEL_TIMEOUT or check the endpoint at {url}", timeout.as_secs_f64()
    )]
    Timeout {
        /// The per-request timeout.
        timeout: Duration,
        /// Requests made.
        attempts: u32,
        /// The URL requested.
        url: String,
    },

    /// No answer within a deadline the policy sets for an optional call
    /// (`explain.timeout`), retries included; the caller goes on without it.
    #[error(
        "no reply within {:.1}s, the policy's `{setting}`; raise `{setting}` (reasoning models need more time) or check the endpoint at {url}", deadline.as_secs_f64()
    )]
    Deadline {
        /// The deadline.
        deadline: Duration,
        /// The policy setting that sets it (`explain.timeout`).
        setting: &'static str,
        /// The URL requested.
        url: String,
    },

    /// The endpoint could not be reached.
    #[error(
        "could not reach the model endpoint {url} ({detail}) after {attempts} attempt(s); check {url_var} and the network"
    )]
    Connect {
        /// The URL requested.
        url: String,
        /// What failed.
        detail: String,
        /// Requests made.
        attempts: u32,
        /// The variable naming the base URL.
        url_var: &'static str,
    },

    /// The endpoint answered with a redirect, which is never followed (a
    /// redirect could carry the key to another host).
    #[error(
        "the model endpoint {url} redirects (HTTP {status}) to {location}; set {url_var} to the final API URL"
    )]
    Redirected {
        /// The 3xx status.
        status: u16,
        /// The URL requested.
        url: String,
        /// The `location` header, if any.
        location: String,
        /// The variable naming the base URL.
        url_var: &'static str,
    },

    /// A 2xx reply that is not the expected JSON.
    #[error(
        "the model endpoint returned a malformed reply ({detail}); body starts with: {excerpt:?}. Check that {url_var} points at {expected}"
    )]
    BadReply {
        /// What is wrong with it.
        detail: String,
        /// The first characters of the body.
        excerpt: String,
        /// The API the client expected.
        expected: String,
        /// The variable naming the base URL.
        url_var: &'static str,
    },

    /// The model declined to answer or answered nothing.
    #[error("the model gave no usable answer: {0}")]
    Empty(String),

    /// The first model was unavailable ([`ModelError::calls_for_fallback`])
    /// and the fallback model failed too; both are named.
    #[error("{0}")]
    FallbackFailed(Box<FallbackFailure>),
}

/// Both models failed: the first unavailable, then the fallback.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the model {first_model} is unavailable ({first}); the fallback model {fallback_model} failed too: {fallback}"
)]
pub struct FallbackFailure {
    /// The first model.
    pub first_model: ModelId,
    /// Why the first model did not answer.
    pub first: ModelError,
    /// The fallback model.
    pub fallback_model: ModelId,
    /// Why the fallback did not answer.
    pub fallback: ModelError,
}

/// What to fix after a 4xx: the prompt length for context-length errors,
/// otherwise the model settings.
fn rejected_hint(message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    if m.contains("context length")
        || m.contains("context_length")
        || m.contains("context window")
        || m.contains("prompt is too long")
        || m.contains("too many tokens")
        || m.contains("maximum context")
    {
        "the prompt is too long for this model: use a model with a larger context window, fewer or smaller inputs, or the policy setting `model.data: schema` (or `none`)"
    } else {
        "check the model settings (COMPUTE_BOT_MODEL, COMPUTE_BOT_MAX_TOKENS, COMPUTE_BOT_TEMPERATURE)"
    }
}

/// `; the server asked to wait 300s` when it did.
fn asked(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!(
            "; the server asked to retry after {}s, beyond the retry budget",
            d.as_secs_f64().ceil() as u64
        ),
        None => String::new(),
    }
}

impl ModelError {
    /// An [`ModelError::Unavailable`] that says what the server asked for
    /// (`Retry-After`) when that was beyond the retry budget.
    pub(crate) fn with_retry_after(self, asked: Option<Duration>) -> ModelError {
        match self {
            ModelError::Unavailable {
                status,
                message,
                attempts,
                elapsed,
                ..
            } => ModelError::Unavailable {
                status,
                message,
                attempts,
                elapsed,
                retry_after: asked,
            },
            other => other,
        }
    }

    /// True for errors a person must fix in the configuration (key, model
    /// name, base URL, account billing), not failed computations: front ends
    /// map these to exit 2 (CLI) / status `error` (action). When the fallback
    /// failed too, its error decides.
    pub fn is_configuration(&self) -> bool {
        match self {
            ModelError::FallbackFailed(both) => both.fallback.is_configuration(),
            e => matches!(
                e,
                ModelError::Config(_)
                    | ModelError::Auth { .. }
                    | ModelError::NotFound { .. }
                    | ModelError::Redirected { .. }
                    | ModelError::Quota { .. }
            ),
        }
    }

    /// True for errors that another try later might fix (rate limits,
    /// outages, timeouts, connection errors). When the fallback failed too,
    /// its error decides.
    pub fn is_transient(&self) -> bool {
        match self {
            ModelError::FallbackFailed(both) => both.fallback.is_transient(),
            e => e.calls_for_fallback(),
        }
    }

    /// True when the model is unavailable after its retries — 5xx, 429 (a
    /// rate limit, also one whose `Retry-After` is beyond the retry budget),
    /// timeouts, connections refused or broken — so the fallback model, if
    /// one is configured, answers the same request. Not for a 400, 401, 403,
    /// 404, a redirect, a malformed reply or a billing/quota error: a second
    /// model would be refused just the same, and the configuration is what
    /// needs fixing. The one place this rule is written.
    pub fn calls_for_fallback(&self) -> bool {
        matches!(
            self,
            ModelError::Unavailable { .. }
                | ModelError::Timeout { .. }
                | ModelError::Connect { .. }
        )
    }
}
