//! [`Secret`]: a token or key that never prints. One type for the GitHub
//! token and the model API key.
//!
//! The crate `compute-bot-secret`, a leaf with no dependency: the model
//! client and the GitHub client both hold their keys in it, and neither
//! knows the other (compute-bot re-exports it as its `secret`).

#![deny(missing_docs)]

use std::fmt;

/// A value that must never be printed: `Debug` and `Display` show `***`,
/// and it cannot be serialized. Call [`Secret::expose`] only where it is
/// sent (an HTTP header, an `::add-mask::` line).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself; call only where it is sent.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Replaces every trace of the secret in `text` with `***`: the whole
    /// value, and words that share its first or last characters (providers
    /// echo keys partly masked, e.g. `sk-abc1****wxyz`).
    pub fn redact(&self, text: &str) -> String {
        redact_key(text, Some(&self.0))
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_string())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Removes a key (and look-alike credential words) from `text`.
pub fn redact_key(text: &str, key: Option<&str>) -> String {
    let mut out = match key {
        Some(k) if !k.is_empty() => text.replace(k, "***"),
        _ => text.to_string(),
    };
    let key_chars: Vec<char> = key.unwrap_or("").chars().collect();
    let prefix: Option<String> = (key_chars.len() >= 12).then(|| key_chars[..8].iter().collect());
    let suffix: Option<String> =
        (key_chars.len() >= 16).then(|| key_chars[key_chars.len() - 6..].iter().collect());
    let looks_secret = |word: &str| {
        let w = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '*');
        (w.len() >= 10 && (w.starts_with("sk-") || w.starts_with("sk_")))
            || prefix.as_deref().is_some_and(|p| w.contains(p))
            || suffix.as_deref().is_some_and(|s| w.contains(s))
    };
    if out.split_whitespace().any(looks_secret) {
        out = out
            .split_inclusive(char::is_whitespace)
            .map(|chunk| {
                let word = chunk.trim_end();
                if looks_secret(word) {
                    format!("***{}", &chunk[word.len()..])
                } else {
                    chunk.to_string()
                }
            })
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints() {
        let s = Secret::new("ghs_abc123");
        assert_eq!(format!("{s} {s:?} {:?}", Some(&s)), "*** *** Some(***)");
        assert_eq!(s.expose(), "ghs_abc123");
    }
}
