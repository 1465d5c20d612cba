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
//!
//! The crate `compute-bot-model` (compute-bot re-exports it as
//! `compute_bot::model`): it knows the units and the [`Secret`] its keys
//! live in, never the sandbox, the policy, a prompt or GitHub. What is asked
//! comes in as a [`ChatRequest`]; what the model answered, and who answered,
//! goes back as plain data.

#![deny(missing_docs)]

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
pub use config::key_variables;
pub use config::{
    DEFAULT_REASONING_MAX_TOKENS, ModelChoice, ModelConfig, ModelOverrides, NO_MODEL_HELP, Secret,
};
pub use error::{FallbackFailure, ModelError};
pub use error_body::excerpt;
pub use provider::{AZURE_DEFAULT_API_VERSION, Provider};
pub use reply::ModelId;
pub use reply::{ChatReply, Finish};
pub use request::{ChatRequest, Message, Role, Tool};
pub use usage::TokenUsage;
