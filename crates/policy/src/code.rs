//! The `code` section: what the code may contain (imports, denied modules
//! and calls, escalations, size).

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::defaults::{DEFAULT_ALLOW_IMPORTS, DEFAULT_DENY_CALLS, strs};
use super::families::default_deny_modules;
use super::rules::RuleId;
use compute_bot_units::ByteSize;

/// The largest `code.max_bytes` a policy may set. Bigger scripts are not
/// data analysis, and the checker's cost grows with the size.
pub(crate) const MAX_CODE_BYTES_LIMIT: ByteSize = ByteSize::mib(1);

/// The language of the code. Only Python exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Language {
    /// Python 3.
    #[default]
    Python,
}

/// `code`: what the code may contain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodePolicy {
    /// The code's language; only `python`.
    language: Language,
    /// Largest accepted script, at most 1MiB.
    #[serde(deserialize_with = "de_max_bytes")]
    pub max_bytes: ByteSize,
    /// Modules the code may import: `name` allows exactly that module,
    /// `pkg.*` allows `pkg` and every submodule.
    #[serde(deserialize_with = "de_allow_imports")]
    pub allow_imports: Vec<String>,
    /// Modules that are always denied, with all their submodules, even when
    /// unknown imports escalate. Their top-level names also go to the
    /// in-sandbox runner (see [`Policy::runtime_rules`](crate::Policy::runtime_rules)).
    #[serde(deserialize_with = "de_module_patterns")]
    pub deny_modules: Vec<String>,
    /// Calls and attributes that are denied, as resolved dotted names
    /// (`os.remove`, `os.exec*`); a bare name is a builtin (`input`).
    #[serde(deserialize_with = "de_call_patterns")]
    pub(crate) deny_calls: Vec<String>,
    /// Rule ids whose findings escalate to a human instead of denying.
    #[serde(deserialize_with = "de_escalate")]
    pub escalate: Vec<RuleId>,
    /// Shorthand for listing `import-not-allowed` in `escalate`.
    pub escalate_unknown_imports: bool,
}

impl Default for CodePolicy {
    fn default() -> Self {
        CodePolicy {
            language: Language::Python,
            max_bytes: ByteSize::kib(64),
            allow_imports: strs(DEFAULT_ALLOW_IMPORTS),
            deny_modules: default_deny_modules(),
            deny_calls: strs(DEFAULT_DENY_CALLS),
            escalate: Vec::new(),
            escalate_unknown_imports: false,
        }
    }
}

impl CodePolicy {
    /// True when findings of `rule` escalate instead of denying.
    pub fn escalates(&self, rule: RuleId) -> bool {
        (self.escalate_unknown_imports && rule == RuleId::ImportNotAllowed)
            || self.escalate.contains(&rule)
    }
}

fn de_max_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<ByteSize, D::Error> {
    let v = ByteSize::deserialize(d)?;
    if v.bytes() == 0 || v > MAX_CODE_BYTES_LIMIT {
        return Err(de::Error::custom(format!(
            "max_bytes `{v}` is out of range; write a size above 0 and at most {MAX_CODE_BYTES_LIMIT}, e.g. `64KiB`"
        )));
    }
    Ok(v)
}

fn is_dotted_name(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|part| {
            let mut cs = part.chars();
            matches!(cs.next(), Some(c) if c == '_' || c.is_alphabetic())
                && cs.all(|c| c == '_' || c.is_alphanumeric())
        })
}

fn valid_module_pattern(s: &str) -> bool {
    is_dotted_name(s.strip_suffix(".*").unwrap_or(s))
}

fn de_allow_imports<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for p in &v {
        if p == "*" || p == ".*" {
            return Err(de::Error::custom(
                "`*` would allow every module, which makes the allowlist meaningless; list the modules \
                 (`pandas.*`, `math`) and set `escalate_unknown_imports: true` to let a human approve others",
            ));
        }
        if !valid_module_pattern(p) {
            return Err(de::Error::custom(format!(
                "`{p}` is not a module pattern; write a dotted module name (`json`, `os.path`) or `pkg.*` for a package and its submodules"
            )));
        }
    }
    Ok(v)
}

fn de_module_patterns<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for p in &v {
        if !valid_module_pattern(p) {
            return Err(de::Error::custom(format!(
                "`{p}` is not a module name; write a dotted module name such as `ctypes` or `urllib.request` (submodules are included)"
            )));
        }
    }
    Ok(v)
}

fn de_call_patterns<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for p in &v {
        let without_stars = p.replace('*', "x");
        if !is_dotted_name(&without_stars) || p.starts_with('*') {
            return Err(de::Error::custom(format!(
                "`{p}` is not a call pattern; write a dotted name such as `os.remove`, optionally ending in `*` (`os.exec*`)"
            )));
        }
    }
    Ok(v)
}

fn de_escalate<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RuleId>, D::Error> {
    let v = Vec::<RuleId>::deserialize(d)?;
    for r in &v {
        if !r.escalatable() {
            return Err(de::Error::custom(format!(
                "rule `{}` cannot escalate: such code cannot be checked or run at all; remove it from `escalate`",
                r.as_str()
            )));
        }
    }
    Ok(v)
}
