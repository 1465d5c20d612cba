//! Reading a provider's error body: the message, type, code and parameter
//! (OpenAI, Anthropic, OpenRouter, Ollama and proxies), errors sent with
//! HTTP 200, and what the words mean (billing, no tool support).

use serde_json::{Value, json};

/// Characters of a body quoted in messages.
pub(crate) const EXCERPT_CHARS: usize = 200;

/// Words of an error's type, code or message that mean billing or quota:
/// waiting does not help, and a second model of the same account would be
/// refused alike. OpenAI: type `insufficient_quota` (codes
/// `credit_balance_exhausted`, `organization_spend_limit_exceeded`,
/// `project_spend_limit_exceeded`, `organization_usage_limit_exceeded`);
/// Anthropic: a too-low credit balance, HTTP 429 with
/// `error.details.error_code: enforced_spend_limit_reached`, HTTP 400 "You
/// have reached your specified API usage limits"; OpenRouter: HTTP 402
/// "Insufficient credits".
const BILLING_WORDS: [&str; 8] = [
    "insufficient_quota",
    "credit balance",
    "credit_balance",
    "billing",
    "insufficient credits",
    "spend_limit",
    "usage_limit_exceeded",
    "api usage limits",
];

/// An error body, read leniently.
#[derive(Debug, Default)]
pub(crate) struct ErrorInfo {
    /// The provider's message (with its type prefixed when given).
    pub(crate) message: String,
    /// `error.type`.
    pub(crate) kind: String,
    /// `error.code` (else Anthropic's `error.details.error_code`) as text.
    pub(crate) code: String,
    /// `error.param`.
    pub(crate) param: String,
    /// A numeric `error.code` that is an HTTP status (OpenRouter).
    pub(crate) code_status: Option<u16>,
}

impl ErrorInfo {
    /// The type, code and `message` in lower case, for matching words.
    pub(crate) fn lower(&self, message: &str) -> String {
        format!("{} {} {}", self.kind, self.code, message).to_ascii_lowercase()
    }
}

/// True when an error is about billing or quota ([`BILLING_WORDS`], HTTP 402).
pub(crate) fn is_billing(status: u16, lower: &str) -> bool {
    status == 402 || BILLING_WORDS.iter().any(|w| lower.contains(w))
}

/// True when an error message says tools are not supported (Ollama "does
/// not support tools", llama.cpp "--jinja", vLLM "--enable-auto-tool-choice",
/// OpenRouter "No endpoints found that support tool use").
pub(crate) fn mentions_no_tools(lower: &str) -> bool {
    lower.contains("tool")
        && (lower.contains("not support")
            || lower.contains("unsupported")
            || lower.contains("support tool")
            || lower.contains("--jinja")
            || lower.contains("enable-auto-tool-choice")
            || lower.contains("not allowed")
            || lower.contains("unknown"))
}

/// The provider's error from a body: `error.message` (OpenAI, Anthropic,
/// OpenRouter), `error` as a string (Ollama), a top-level `message`, or an
/// excerpt of the text.
pub(crate) fn error_info(body: &str) -> ErrorInfo {
    let mut info = ErrorInfo::default();
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        let msg = match v.get("error") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(e) => {
                info.kind = text(e.get("type"));
                info.code = text(e.get("code"));
                if info.code.is_empty() {
                    info.code = text(e.pointer("/details/error_code"));
                }
                info.param = text(e.get("param"));
                info.code_status = e
                    .get("code")
                    .and_then(Value::as_u64)
                    .and_then(|c| u16::try_from(c).ok())
                    .filter(|c| (400..600).contains(c));
                let m = e.get("message").and_then(Value::as_str);
                // OpenRouter puts the upstream provider's own words in metadata.raw.
                let raw = e
                    .pointer("/metadata/raw")
                    .and_then(Value::as_str)
                    .map(|r| format!(" ({})", excerpt(r, 300)))
                    .unwrap_or_default();
                match (info.kind.as_str(), m) {
                    ("", Some(m)) => Some(format!("{m}{raw}")),
                    (t, Some(m)) => Some(format!("{t}: {m}{raw}")),
                    _ => None,
                }
            }
            None => v.get("message").and_then(Value::as_str).map(str::to_string),
        };
        if let Some(m) = msg {
            info.message = excerpt(&m, 500);
            return info;
        }
    }
    let t = body.trim();
    info.message = if t.is_empty() {
        "empty body".into()
    } else {
        excerpt(t, EXCERPT_CHARS)
    };
    info
}

/// The error of a 2xx body that carries `{"error": ...}` instead of a reply
/// (OpenRouter), or a choice that ended in an error (`finish_reason: error`).
pub(crate) fn error_in_success(body: &str) -> Option<ErrorInfo> {
    let v: Value = serde_json::from_str(body).ok()?;
    if v.get("error").is_some_and(|e| !e.is_null())
        && v.get("choices").is_none()
        && v.get("content").is_none()
    {
        return Some(error_info(body));
    }
    let choice = v.get("choices")?.get(0)?;
    let failed = choice.get("finish_reason").and_then(Value::as_str) == Some("error");
    let err = choice.get("error").filter(|e| !e.is_null());
    if !failed && err.is_none() {
        return None;
    }
    let mut info = err
        .map(|e| error_info(&json!({"error": e}).to_string()))
        .unwrap_or_default();
    if info.message.is_empty() {
        info.message = "the provider ended the reply with an error (finish_reason: error)".into();
    }
    info.code_status = info.code_status.or(Some(502));
    Some(info)
}

/// At most `max` characters of `s`, with `…` when cut.
pub fn excerpt(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_from_both_providers_bodies() {
        let error_message = |b: &str| error_info(b).message;
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"invalid_request_error"}}"#),
            "invalid_request_error: bad key"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            ),
            "authentication_error: invalid x-api-key"
        );
        assert_eq!(
            error_message(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(error_message("<html>502</html>"), "<html>502</html>");
        assert_eq!(error_message(""), "empty body");
        let or = error_info(
            r#"{"error":{"code":429,"message":"Provider returned error","metadata":{"raw":"upstream busy","provider_name":"X"}}}"#,
        );
        assert_eq!(or.code_status, Some(429));
        assert_eq!(or.message, "Provider returned error (upstream busy)");
    }

    #[test]
    fn billing_errors_of_both_providers_are_told_from_rate_limits() {
        let billing = |status: u16, body: &str| {
            let info = error_info(body);
            is_billing(status, &info.lower(&info.message))
        };
        // Anthropic's monthly spend cap: a 429 rate_limit_error with a detail code.
        assert!(billing(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Your organization has reached its monthly spend limit.","details":{"error_code":"enforced_spend_limit_reached"}}}"#
        ));
        assert!(billing(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2026-01-01 at 00:00 UTC."}}"#
        ));
        assert!(billing(
            429,
            r#"{"error":{"message":"You have no credits left.","type":"insufficient_quota","code":"credit_balance_exhausted"}}"#
        ));
        assert!(billing(
            402,
            r#"{"error":{"code":402,"message":"Insufficient credits"}}"#
        ));
        // An ordinary rate limit is not billing.
        assert!(!billing(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#
        ));
        assert!(!billing(
            429,
            r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}"#
        ));
    }
}
