//! Token usage, which a provider may leave out.

use serde::{Deserialize, Serialize};

/// Tokens used by one or more model calls.
///
/// A count is `None` — `null` in the report JSON — when a reply did not
/// report it (some OpenAI-compatible servers send no `usage`): unknown, not
/// zero. A sum with an unknown part is unknown. No calls at all is a known
/// zero (the [`Default`]). In JSON: `{"input_tokens": 120, "output_tokens": 20}`,
/// or `{"input_tokens": null, "output_tokens": null}` when unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens, if known.
    pub input_tokens: Option<u64>,
    /// Completion tokens (reasoning included), if known.
    pub output_tokens: Option<u64>,
}

impl Default for TokenUsage {
    /// Nothing used yet: a known zero.
    fn default() -> Self {
        TokenUsage::known(0, 0)
    }
}

impl TokenUsage {
    /// Neither count reported.
    pub const UNKNOWN: TokenUsage = TokenUsage {
        input_tokens: None,
        output_tokens: None,
    };

    /// Both counts known.
    pub fn known(input_tokens: u64, output_tokens: u64) -> Self {
        TokenUsage {
            input_tokens: Some(input_tokens),
            output_tokens: Some(output_tokens),
        }
    }

    /// Adds another usage to this one; an unknown count makes the sum unknown.
    pub fn add(&mut self, other: TokenUsage) {
        let sum = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_add(b?));
        self.input_tokens = sum(self.input_tokens, other.input_tokens);
        self.output_tokens = sum(self.output_tokens, other.output_tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_part_makes_the_sum_unknown_and_old_reports_still_read() {
        let mut u = TokenUsage::default();
        u.add(TokenUsage::known(10, 2));
        assert_eq!(u, TokenUsage::known(10, 2));
        u.add(TokenUsage {
            input_tokens: Some(5),
            output_tokens: None,
        });
        assert_eq!(u.input_tokens, Some(15));
        assert_eq!(u.output_tokens, None);
        u.add(TokenUsage::known(1, 1));
        assert_eq!(u.output_tokens, None, "unknown stays unknown");
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            r#"{"input_tokens":16,"output_tokens":null}"#
        );
        let old: TokenUsage =
            serde_json::from_str(r#"{"input_tokens":3,"output_tokens":4}"#).unwrap();
        assert_eq!(old, TokenUsage::known(3, 4));
        let missing: TokenUsage = serde_json::from_str("{}").unwrap();
        assert_eq!(missing, TokenUsage::UNKNOWN);
    }
}
