//! The model's answer to one request, and which model gave it.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::TokenUsage;

/// Why the model stopped writing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Finish {
    /// It finished (`stop`, `end_turn`, `tool_calls`, `tool_use`, ...).
    #[default]
    Complete,
    /// It hit the token budget (`length`, `max_tokens`): the reply is cut.
    Length,
    /// A content filter stopped it.
    Filtered,
}

/// The model that answered (and so wrote the code): the provider and the
/// configured model name, and whether it was the fallback model. In the
/// report's attempts and the run record as
/// `{"provider": "anthropic", "model": "claude-haiku-4-5", "fallback": true}`
/// (`fallback` only when true).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelId {
    /// The provider's configuration name (`openai`, `anthropic`).
    pub provider: String,
    /// The model name as configured (`COMPUTE_BOT_MODEL`, the `model` input).
    pub model: String,
    /// True when the first model was unavailable and the fallback answered.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fallback: bool,
}

impl fmt::Display for ModelId {
    /// `gpt-4o-mini (openai)`, `claude-haiku-4-5 (anthropic, fallback)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fallback = if self.fallback { ", fallback" } else { "" };
        write!(f, "{} ({}{fallback})", self.model, self.provider)
    }
}

/// The model's answer to one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatReply {
    /// The text of the answer (all text parts joined).
    pub text: String,
    /// The name and arguments of the tool the model called, if it called one.
    pub tool_call: Option<(String, Value)>,
    /// The model's refusal message (OpenAI `refusal`, Anthropic `stop_reason: refusal`).
    pub refusal: Option<String>,
    /// Why it stopped.
    pub finish: Finish,
    /// Tokens used by this call, as the responses said (all requests of the
    /// call that returned usage, a cut empty reply included); a count a
    /// response did not give is unknown.
    pub usage: TokenUsage,
    /// Of the output tokens, those spent on hidden reasoning (0 when not reported).
    pub reasoning_tokens: u64,
    /// The completion budget of the last request.
    pub max_tokens: u32,
    /// HTTP requests this call made (retries and adaptations included; of
    /// the model that answered).
    pub requests: u32,
    /// The model that answered, as reported by the endpoint (or the configured name).
    pub model: String,
    /// The model that answered, as configured, and whether it was the fallback.
    pub answered_by: ModelId,
}
