//! Stage: plan and generate. Language-model providers over reqwest.
//!
//! [`ModelConfig::from_env`] reads the configuration from flags and
//! environment variables; [`ModelClient::complete`] sends a provider-neutral
//! [`ChatRequest`] to the configured model, with bounded retries, and to
//! its fallback model while the first is unavailable. The API keys live in
//! [`Secret`]s and never reach errors, logs or Debug output.
//!
//! By concept: `request` (what is asked), `provider` (each provider declared
//! once: settings, URL, body, reply reading), `reply` (the answer and who
//! gave it), `usage` (tokens, which may be unknown), `error_body` (reading
//! error replies), `retry` (backoff, `Retry-After`, the budget), `endpoint`
//! (one model over HTTP), `client` (the model and its fallback), `config`,
//! `error`.

mod client;
mod config;
mod endpoint;
mod error;
mod error_body;
mod provider;
mod reply;
mod request;
mod retry;
mod usage;

pub use client::ModelClient;
pub(crate) use config::key_variables;
pub use config::{
    DEFAULT_REASONING_MAX_TOKENS, ModelChoice, ModelConfig, ModelOverrides, NO_MODEL_HELP, Secret,
};
pub use error::{FallbackFailure, ModelError};
pub(crate) use error_body::excerpt;
pub use provider::{AZURE_DEFAULT_API_VERSION, Provider};
pub use reply::ModelId;
pub(crate) use reply::{ChatReply, Finish};
#[cfg(test)]
pub(crate) use request::Role;
pub(crate) use request::Tool;
pub use request::{ChatRequest, Message};
pub use usage::TokenUsage;
