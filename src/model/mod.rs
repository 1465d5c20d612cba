//! Stage: plan and generate. Language-model providers over reqwest.
//!
//! [`ModelConfig::from_env`] reads the configuration from flags and
//! environment variables; [`ModelClient::complete`] sends a provider-neutral
//! [`ChatRequest`] to an OpenAI-compatible or Anthropic endpoint, with
//! bounded retries. The API key lives in a [`Secret`] and never reaches
//! errors, logs or Debug output.

mod client;
mod config;
mod error;

#[cfg(test)]
pub(crate) use client::Role;
pub use client::{AZURE_DEFAULT_API_VERSION, ChatRequest, Message, ModelClient};
pub(crate) use client::{ChatReply, Finish, Tool};
pub(crate) use config::ENV_API_KEY;
pub use config::{
    DEFAULT_REASONING_MAX_TOKENS, ModelConfig, ModelOverrides, NO_MODEL_HELP, Provider, Secret,
};
pub use error::ModelError;

pub(crate) use client::excerpt;

use serde::{Deserialize, Serialize};

/// Tokens used by one or more model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl TokenUsage {
    /// Adds another usage to this one.
    pub fn add(&mut self, other: TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}
