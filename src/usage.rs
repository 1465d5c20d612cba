//! What an answer took from the model provider: HTTP requests, tokens in and
//! out and, when the policy sets `model.prices`, the cost — one summary of a
//! [`Report`] for the comment footer, the job summary, the `usage` output and
//! the terminal.
//!
//! A count the provider did not report is **unknown**, never 0: if any reply
//! of the answer lacked a count, the total of that count is unknown (shown
//! as "unknown", `null` in JSON), and so is the cost.

use serde::Serialize;

use crate::report::Report;

/// The usage of one answer, as the `usage` output shows it:
/// `{"model_requests": 3, "input_tokens": 1200, "output_tokens": null}`,
/// with `"cost_usd"` (a number, or `null` when a count is unknown) only when
/// the policy sets prices.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Usage {
    /// HTTP requests sent to the model providers (retries, failed requests
    /// and the fallback's included).
    pub model_requests: u64,
    /// Prompt tokens of every reply, or `None` when a reply did not say.
    pub input_tokens: Option<u64>,
    /// Completion tokens of every reply, or `None` when a reply did not say.
    pub output_tokens: Option<u64>,
    /// Dollars at the policy's prices; absent without prices, `None`
    /// (`null`) when a count is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<Option<f64>>,
}

impl Usage {
    /// The usage of `report`.
    pub fn of(report: &Report) -> Usage {
        Usage {
            model_requests: report.model_requests,
            input_tokens: report.usage.input_tokens,
            output_tokens: report.usage.output_tokens,
            cost_usd: report.prices.map(|_| report.cost_usd),
        }
    }

    /// The `usage` output: compact JSON.
    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("usage serializes")
    }

    /// One line for people: `2 model requests · tokens: 1,200 in, 80 out ·
    /// cost $0.0048`, `tokens: unknown in, 80 out`, or `no model requests`
    /// (exact code run without a model).
    pub fn line(&self) -> String {
        if self.model_requests == 0 && self.input_tokens == Some(0) && self.output_tokens == Some(0)
        {
            return "no model requests".to_string();
        }
        let n = self.model_requests;
        let mut s = format!(
            "{n} model request{} · tokens: {} in, {} out",
            if n == 1 { "" } else { "s" },
            count(self.input_tokens),
            count(self.output_tokens)
        );
        match self.cost_usd {
            None => {}
            Some(Some(c)) => s.push_str(&format!(" · cost {}", dollars(c))),
            Some(None) => s.push_str(" · cost unknown"),
        }
        s
    }
}

/// `1,234,567`, or `unknown`.
fn count(n: Option<u64>) -> String {
    let Some(n) = n else {
        return "unknown".to_string();
    };
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `$0.0048` below a dollar (four decimals), `$12.35` from one.
fn dollars(c: f64) -> String {
    if c < 1.0 {
        format!("${c:.4}")
    } else {
        format!("${c:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TokenUsage;
    use crate::policy::Policy;

    fn report(usage: TokenUsage, requests: u64, prices: Option<&str>) -> Report {
        let policy = match prices {
            Some(p) => {
                Policy::from_yaml_str(&format!("version: 1\nmodel:\n  prices: {p}\n"), "p.yml")
                    .unwrap()
            }
            None => Policy::default(),
        };
        let mut r: Report = serde_json::from_value(serde_json::json!({
            "goal": null, "plan": null, "status": "ok", "stop_reason": null,
            "result": null, "explanation": null, "attempts": [], "code": null,
            "code_sha256": null, "verdict": null, "outcome": null, "inputs": [],
            "policy": null, "usage": {"input_tokens": 0, "output_tokens": 0},
            "timings_ms": {}
        }))
        .unwrap();
        r.usage = usage;
        r.model_requests = requests;
        r.prices = policy.model.prices;
        r.cost_usd = r
            .prices
            .and_then(|p| p.cost(usage.input_tokens, usage.output_tokens));
        r
    }

    #[test]
    fn known_counts_show_numbers_and_a_cost_at_the_policys_prices() {
        let r = report(
            TokenUsage::known(1_234_567, 800),
            3,
            Some("{input_per_million: 3.0, output_per_million: 15.0}"),
        );
        let u = Usage::of(&r);
        assert_eq!(
            u.line(),
            "3 model requests · tokens: 1,234,567 in, 800 out · cost $3.72"
        );
        let v: serde_json::Value = serde_json::from_str(&u.json()).unwrap();
        assert_eq!(v["model_requests"], 3);
        assert_eq!(v["input_tokens"], 1_234_567);
        assert_eq!(v["output_tokens"], 800);
        let cost = v["cost_usd"].as_f64().unwrap();
        assert!((cost - 3.715_701).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn an_unknown_count_is_unknown_not_zero_and_so_is_the_cost() {
        let half = TokenUsage {
            input_tokens: Some(10),
            output_tokens: None,
        };
        let r = report(
            half,
            1,
            Some("{input_per_million: 1, output_per_million: 1}"),
        );
        let u = Usage::of(&r);
        assert_eq!(
            u.line(),
            "1 model request · tokens: 10 in, unknown out · cost unknown"
        );
        assert_eq!(
            u.json(),
            r#"{"model_requests":1,"input_tokens":10,"output_tokens":null,"cost_usd":null}"#
        );
        let unpriced = Usage::of(&report(TokenUsage::UNKNOWN, 2, None));
        assert_eq!(
            unpriced.json(),
            r#"{"model_requests":2,"input_tokens":null,"output_tokens":null}"#
        );
        assert_eq!(
            unpriced.line(),
            "2 model requests · tokens: unknown in, unknown out"
        );
        let none = Usage::of(&report(TokenUsage::default(), 0, None));
        assert_eq!(none.line(), "no model requests");
    }
}
