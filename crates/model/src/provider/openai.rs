//! OpenAI chat completions and compatible endpoints (Azure OpenAI in both
//! forms, OpenRouter, Ollama, vLLM, llama.cpp server).

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Adaptation, Api, Call, KeyHeader, Learned, Route, json_kind};
use crate::error_body::ErrorInfo;
use crate::reply::{ChatReply, Finish};
use crate::request::ChatRequest;
use crate::{ModelError, TokenUsage};

/// The Azure OpenAI `api-version` used for a deployments URL that names none
/// (a generally available version).
pub const AZURE_DEFAULT_API_VERSION: &str = "2024-10-21";

/// Hosts of Azure OpenAI resources (the key goes in `api-key`).
const AZURE_HOSTS: [&str; 3] = [
    ".openai.azure.com",
    ".cognitiveservices.azure.com",
    ".services.ai.azure.com",
];

/// The OpenAI-compatible wire format.
pub(super) struct OpenAi;

impl Api for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["open-ai", "openai-compatible"]
    }

    fn note(&self) -> &'static str {
        "any OpenAI-compatible endpoint"
    }

    fn key_var(&self) -> &'static str {
        "OPENAI_API_KEY"
    }

    fn default_base_url(&self) -> &'static str {
        "https://api.openai.com/v1"
    }

    fn max_temperature(&self) -> f32 {
        2.0
    }

    fn expected(&self) -> &'static str {
        "an OpenAI-compatible chat-completions API (…/v1)"
    }

    /// `{base}/chat/completions`. Azure OpenAI in both forms:
    /// `https://R.openai.azure.com/openai/deployments/D?api-version=V` (the
    /// version kept as a query parameter, [`AZURE_DEFAULT_API_VERSION`] when
    /// missing) and `https://R.openai.azure.com/openai/v1` (no version);
    /// both take the key in an `api-key` header. Any other query string is
    /// kept after the path.
    fn route(&self, base: &str) -> Result<Route, ModelError> {
        let url = reqwest::Url::parse(base)
            .map_err(|e| ModelError::Config(format!("the base URL `{base}` is not a URL ({e})")))?;
        let host = url.host_str().unwrap_or("").to_ascii_lowercase();
        let path = url.path().trim_end_matches('/').to_string();
        let azure_host = AZURE_HOSTS.iter().any(|h| host.ends_with(h));
        let deployments = path.contains("/openai/deployments/");
        let v1 = path.ends_with("/openai/v1");
        let mut pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if deployments && !pairs.iter().any(|(k, _)| k == "api-version") {
            pairs.push(("api-version".into(), AZURE_DEFAULT_API_VERSION.into()));
        }
        let mut chat = url.clone();
        chat.set_path(&format!("{path}/chat/completions"));
        chat.set_query(None);
        if !pairs.is_empty() {
            chat.query_pairs_mut().extend_pairs(pairs);
        }
        let key = if azure_host || deployments || v1 {
            KeyHeader::Named("api-key")
        } else {
            KeyHeader::Bearer
        };
        Ok(Route {
            url: chat.to_string(),
            key,
            headers: &[],
        })
    }

    /// OpenAI's reasoning families are known to want `max_completion_tokens`
    /// and the default temperature; other endpoints teach the client with
    /// their first 400.
    fn known(&self, model: &str, route: &Route) -> Learned {
        let reasoning =
            crate::config::is_openai_reasoning_model(model) && route.key == KeyHeader::Bearer;
        Learned {
            completion_tokens: reasoning,
            no_temperature: reasoning,
            ..Learned::default()
        }
    }

    fn body(&self, req: &ChatRequest, call: Call<'_>) -> Value {
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if !req.system.is_empty() {
            messages.push(json!({"role": "system", "content": req.system}));
        }
        messages.extend(
            req.messages
                .iter()
                .map(|m| json!({"role": m.role.as_str(), "content": m.content})),
        );
        let mut body = json!({"model": call.model, "messages": messages});
        let budget_key = if call.learned.completion_tokens {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[budget_key] = json!(call.budget);
        if !call.learned.no_temperature {
            body["temperature"] = json!(call.temperature);
        }
        if let Some(t) = req.tool.as_ref().filter(|_| !call.learned.no_tools) {
            body["tools"] = json!([{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}}]);
            body["tool_choice"] = json!({"type": "function", "function": {"name": t.name}});
        }
        body
    }

    /// Reasoning models reject `max_tokens` (naming `max_completion_tokens`)
    /// and any temperature but the default.
    fn adaptation(&self, err: &ErrorInfo, lower: &str, body: &Value) -> Option<Adaptation> {
        let param = err.param.as_str();
        if (param == "max_tokens" || lower.contains("max_completion_tokens"))
            && body.get("max_tokens").is_some()
        {
            Some(Adaptation::MaxCompletionTokens)
        } else if (param == "temperature" || lower.contains("temperature"))
            && (lower.contains("unsupported")
                || lower.contains("not support")
                || lower.contains("only the default"))
            && body.get("temperature").is_some()
        {
            Some(Adaptation::DropTemperature)
        } else {
            None
        }
    }

    fn parse(&self, text: &str) -> Result<ChatReply, String> {
        let r: Reply = serde_json::from_str(text)
            .map_err(|e| format!("not a chat-completions JSON object: {e}"))?;
        let choice = r
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| "`choices` is empty".to_string())?;
        let content = match choice.message.content {
            Some(Value::String(s)) => s,
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
            Some(Value::Null) | None => String::new(),
            Some(other) => {
                return Err(format!(
                    "`choices[0].message.content` is a {}, not text",
                    json_kind(&other)
                ));
            }
        };
        let tool_call = choice.message.tool_calls.iter().flatten().find_map(|c| {
            let f = c.get("function")?;
            let name = f.get("name")?.as_str()?.to_string();
            let args = match f.get("arguments") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                }
                Some(v) => v.clone(),
                None => Value::Null,
            };
            Some((name, args))
        });
        let finish = match choice.finish_reason.as_deref() {
            Some("length") => Finish::Length,
            Some("content_filter") => Finish::Filtered,
            _ => Finish::Complete,
        };
        let usage = r.usage.unwrap_or_default();
        Ok(ChatReply {
            text: content,
            tool_call,
            refusal: choice.message.refusal.filter(|r| !r.trim().is_empty()),
            finish,
            usage: TokenUsage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            },
            reasoning_tokens: usage
                .completion_tokens_details
                .and_then(|d| d.get("reasoning_tokens").and_then(Value::as_u64))
                .unwrap_or(0),
            model: r.model.unwrap_or_default(),
            ..ChatReply::default()
        })
    }
}

#[derive(Deserialize)]
struct Reply {
    model: Option<String>,
    choices: Vec<Choice>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    content: Option<Value>,
    refusal: Option<String>,
    tool_calls: Option<Vec<Value>>,
}

#[derive(Deserialize, Default)]
struct Usage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    completion_tokens_details: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_a_reply_omits_is_unknown_not_zero() {
        let body = |usage: &str| {
            format!(
                r#"{{"model":"m","choices":[{{"message":{{"content":"hi"}},"finish_reason":"stop"}}]{usage}}}"#
            )
        };
        let none = OpenAi.parse(&body("")).unwrap();
        assert_eq!(none.usage, TokenUsage::UNKNOWN);
        let null = OpenAi.parse(&body(r#","usage":null"#)).unwrap();
        assert_eq!(null.usage, TokenUsage::UNKNOWN);
        let half = OpenAi
            .parse(&body(r#","usage":{"prompt_tokens":7}"#))
            .unwrap();
        assert_eq!(half.usage.input_tokens, Some(7));
        assert_eq!(half.usage.output_tokens, None);
        let zero = OpenAi
            .parse(&body(
                r#","usage":{"prompt_tokens":0,"completion_tokens":0}"#,
            ))
            .unwrap();
        assert_eq!(zero.usage, TokenUsage::default());
    }

    #[test]
    fn azure_hosts_take_the_key_in_api_key_and_others_as_bearer() {
        let r = OpenAi
            .route("https://r.openai.azure.com/openai/deployments/d")
            .unwrap();
        assert_eq!(r.key, KeyHeader::Named("api-key"));
        assert!(r.url.ends_with(&format!(
            "/openai/deployments/d/chat/completions?api-version={AZURE_DEFAULT_API_VERSION}"
        )));
        let r = OpenAi.route("http://localhost:11434/v1").unwrap();
        assert_eq!(r.key, KeyHeader::Bearer);
        assert_eq!(r.url, "http://localhost:11434/v1/chat/completions");
    }
}
