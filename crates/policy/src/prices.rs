//! `model.prices`: what the model's tokens cost, so that an answer can show
//! its cost next to its tokens.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

/// `model.prices`: US dollars per million tokens, as the provider bills
/// them. Optional; without it an answer shows tokens but no cost.
///
/// ```yaml
/// model:
///   prices: {input_per_million: 3.0, output_per_million: 15.0}
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Dollars per million input (prompt) tokens.
    pub input_per_million: Price,
    /// Dollars per million output (completion, reasoning included) tokens.
    pub output_per_million: Price,
}

impl Prices {
    /// The cost in dollars of `input` and `output` tokens; `None` when a
    /// count is unknown (a provider left it out): an unknown count has no price.
    pub fn cost(&self, input: Option<u64>, output: Option<u64>) -> Option<f64> {
        let input = input? as f64 * self.input_per_million.0;
        let output = output? as f64 * self.output_per_million.0;
        Some((input + output) / 1_000_000.0)
    }
}

/// A price per million tokens: a finite number, zero or more.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Price(f64);

impl<'de> Deserialize<'de> for Price {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(f64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) if n.is_finite() && n >= 0.0 => Ok(Price(n)),
            Raw::N(n) => Err(de::Error::custom(format!(
                "price `{n}` is not usable; write dollars per million tokens as a number of 0 or more, e.g. `3.0`"
            ))),
            Raw::S(s) => Err(de::Error::custom(format!(
                "price `{s}` is not a number; write dollars per million tokens as a plain number, e.g. `3.0` (no currency sign)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Policy;

    fn load(yaml: &str) -> Result<Policy, String> {
        Policy::from_yaml_str(yaml, "p.yml").map_err(|e| e.to_string())
    }

    #[test]
    fn prices_give_a_cost_and_an_unknown_count_gives_none() {
        let p = load(
            "version: 1\nmodel:\n  prices: {input_per_million: 3.0, output_per_million: 15}\n",
        )
        .unwrap();
        let prices = p.model.prices.unwrap();
        let cost = prices.cost(Some(1_000_000), Some(200_000)).unwrap();
        assert!((cost - 6.0).abs() < 1e-9, "{cost}");
        assert_eq!(prices.cost(Some(5), None), None);
        assert!(load("version: 1\n").unwrap().model.prices.is_none());
    }

    #[test]
    fn a_bad_price_names_the_file_line_and_what_to_write() {
        let e = load("version: 1\nmodel:\n  prices:\n    input_per_million: \"$3\"\n    output_per_million: 1\n")
            .unwrap_err();
        assert!(e.starts_with("p.yml:4:"), "{e}");
        assert!(e.contains("no currency sign"), "{e}");
        let e = load(
            "version: 1\nmodel:\n  prices:\n    input_per_million: 1\n    output_per_million: -2\n",
        )
        .unwrap_err();
        assert!(e.starts_with("p.yml:5:"), "{e}");
        assert!(e.contains("0 or more"), "{e}");
        let e = load("version: 1\nmodel:\n  prices: {input_per_million: 1}\n").unwrap_err();
        assert!(e.starts_with("p.yml:3:"), "{e}");
        assert!(e.contains("output_per_million"), "{e}");
        let e =
            load("version: 1\nmodel:\n  prices: {input: 1, output_per_million: 1}\n").unwrap_err();
        assert!(e.contains("unknown field"), "{e}");
    }
}
