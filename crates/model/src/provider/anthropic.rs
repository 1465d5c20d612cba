//! The Anthropic Messages API.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Api, Call, KeyHeader, Route};
use crate::reply::{ChatReply, Finish};
use crate::request::ChatRequest;
use crate::{ModelError, TokenUsage};

/// The Messages API wire format.
pub(super) struct Anthropic;

impl Api for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn key_var(&self) -> &'static str {
        "ANTHROPIC_API_KEY"
    }

    fn default_base_url(&self) -> &'static str {
        "https://api.anthropic.com"
    }

    fn max_temperature(&self) -> f32 {
        1.0
    }

    fn expected(&self) -> &'static str {
        "the Anthropic Messages API (https://api.anthropic.com)"
    }

    /// The client appends `/v1/messages`, so a trailing `/v1` is dropped.
    fn normalize_base_url(&self, mut base: String) -> String {
        if base.ends_with("/v1") {
            base.truncate(base.len() - 3);
        }
        base
    }

    fn route(&self, base: &str) -> Result<Route, ModelError> {
        Ok(Route {
            url: format!("{base}/v1/messages"),
            key: KeyHeader::Named("x-api-key"),
            headers: &[("anthropic-version", "2023-06-01")],
        })
    }

    fn body(&self, req: &ChatRequest, call: Call<'_>) -> Value {
        let messages: Vec<Value> = req
            .messages
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
            .collect();
        let mut body = json!({
            "model": call.model,
            "max_tokens": call.budget,
            "messages": messages,
            "temperature": call.temperature,
        });
        if !req.system.is_empty() {
            body["system"] = Value::String(req.system.clone());
        }
        if let Some(t) = req.tool.as_ref().filter(|_| !call.learned.no_tools) {
            body["tools"] = json!([{"name": t.name, "description": t.description, "input_schema": t.parameters}]);
            body["tool_choice"] = json!({"type": "tool", "name": t.name});
        }
        body
    }

    fn parse(&self, text: &str) -> Result<ChatReply, String> {
        let r: Reply = serde_json::from_str(text)
            .map_err(|e| format!("not a Messages API JSON object: {e}"))?;
        let content: String = r
            .content
            .iter()
            .filter(|b| b.kind == "text")
            .filter_map(|b| b.text.as_deref())
            .collect::<Vec<_>>()
            .join("");
        let tool_call = r.content.iter().find(|b| b.kind == "tool_use").map(|b| {
            (
                b.name.clone().unwrap_or_default(),
                b.input.clone().unwrap_or(Value::Null),
            )
        });
        let (finish, refusal) = match r.stop_reason.as_deref() {
            Some("max_tokens") | Some("model_context_window_exceeded") => (Finish::Length, None),
            Some("refusal") => (
                Finish::Filtered,
                Some("the model declined (stop_reason: refusal)".to_string()),
            ),
            _ => (Finish::Complete, None),
        };
        let u = r.usage.unwrap_or_default();
        Ok(ChatReply {
            text: content,
            tool_call,
            refusal,
            finish,
            usage: TokenUsage {
                // Cached prompt tokens are prompt tokens too.
                input_tokens: u.input_tokens.map(|n| {
                    n + u.cache_creation_input_tokens.unwrap_or(0)
                        + u.cache_read_input_tokens.unwrap_or(0)
                }),
                output_tokens: u.output_tokens,
            },
            model: r.model.unwrap_or_default(),
            ..ChatReply::default()
        })
    }
}

#[derive(Deserialize)]
struct Reply {
    model: Option<String>,
    content: Vec<Block>,
    stop_reason: Option<String>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    name: Option<String>,
    input: Option<Value>,
}

#[derive(Deserialize, Default)]
struct Usage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_cached_prompt_tokens_and_a_missing_usage_is_unknown() {
        let body = |usage: &str| {
            format!(
                r#"{{"model":"c","content":[{{"type":"text","text":"hi"}}],"stop_reason":"end_turn"{usage}}}"#
            )
        };
        let r = Anthropic
            .parse(&body(
                r#","usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":3}"#,
            ))
            .unwrap();
        assert_eq!(r.usage, TokenUsage::known(105, 3));
        assert_eq!(
            Anthropic.parse(&body("")).unwrap().usage,
            TokenUsage::UNKNOWN
        );
        let half = Anthropic
            .parse(&body(r#","usage":{"output_tokens":3}"#))
            .unwrap();
        assert_eq!(half.usage.input_tokens, None);
        assert_eq!(half.usage.output_tokens, Some(3));
    }

    #[test]
    fn a_trailing_v1_is_dropped_and_messages_appended() {
        let base = Anthropic.normalize_base_url("https://proxy.example/anthropic/v1".into());
        assert_eq!(
            Anthropic.route(&base).unwrap().url,
            "https://proxy.example/anthropic/v1/messages"
        );
    }
}
