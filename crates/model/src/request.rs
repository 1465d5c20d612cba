//! A provider-neutral chat request: what the caller asks; each provider's
//! [`super::provider::Api::body`] turns it into its wire format.

use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The caller (prompt, repair notes).
    User,
    /// The model (earlier replies).
    Assistant,
}

impl Role {
    /// The wire name (`user`, `assistant`), the same for every provider.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A tool the model is made to call (structured output): OpenAI
/// `tools` + `tool_choice: {"type":"function",...}`, Anthropic `tools` +
/// `tool_choice: {"type":"tool",...}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// The tool's name (`run_python`).
    pub name: String,
    /// What it is for, as the model reads it.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

/// A provider-neutral chat request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatRequest {
    /// The system prompt (the first message for OpenAI, top-level `system` for Anthropic).
    pub system: String,
    /// The conversation, starting with a user message.
    pub messages: Vec<Message>,
    /// Completion budget; the configured `max_tokens` when `None` (then a
    /// reply cut at the budget raises it for the following calls).
    pub max_tokens: Option<u32>,
    /// A tool the model must call. Sent only while the endpoint accepts
    /// tools; after a "tools not supported" reply the client remembers it and
    /// asks in plain text (the caller then reads a fenced block).
    pub tool: Option<Tool>,
}
