//! The policy: one value holding every section, with safe defaults, and the
//! small sections that belong to no other file (`attempts`, `model`,
//! `version`).
//!
//! Each section lives beside what it decides: `who`/`escalation` in
//! `authorize`, `sandbox` in `sandbox`, `inputs` in `inputs`, `code` in
//! `code`, `output` in `output`; the default lists in `defaults`; reading the
//! file (and its errors) in `reader`.

use std::path::PathBuf;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::authorize::{Escalation, Who};
use super::code::CodePolicy;
use super::inputs::Inputs;
use super::output::Output;
use super::sandbox::SandboxPolicy;

/// The most generate/repair attempts a policy may allow.
const MAX_ATTEMPTS: u8 = 10;

/// A number of generate/repair attempts, 1..=10.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Attempts(u8);

impl Attempts {
    /// The number of attempts.
    pub fn get(self) -> u8 {
        self.0
    }

    /// `n` attempts, or `None` when `n` is outside 1..=10.
    fn new(n: u8) -> Option<Self> {
        (1..=MAX_ATTEMPTS).contains(&n).then_some(Attempts(n))
    }
}

impl Default for Attempts {
    fn default() -> Self {
        Attempts(3)
    }
}

impl<'de> Deserialize<'de> for Attempts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(i64),
            S(String),
        }
        let n = match Raw::deserialize(d)? {
            Raw::N(n) => n,
            Raw::S(s) => {
                return Err(de::Error::custom(format!(
                    "attempts `{s}` is not a number; write a number from 1 to {MAX_ATTEMPTS}"
                )));
            }
        };
        u8::try_from(n)
            .ok()
            .and_then(Attempts::new)
            .ok_or_else(|| {
                de::Error::custom(format!(
                    "attempts `{n}` is out of range; write a number from 1 to {MAX_ATTEMPTS} (each attempt is a model call and a sandbox run)"
                ))
            })
    }
}

/// `model.data`: how much of the input data may leave for the model provider,
/// in every request (generation, repairs, explanation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataLevel {
    /// File names, sizes, CSV header and first 5 rows, JSON top-level keys,
    /// the first lines of text; repairs carry up to 2,000 characters of the
    /// end of stderr; the explanation sees up to 4,000 characters of the result.
    #[default]
    Preview,
    /// File names, sizes, column names and inferred types (JSON keys and
    /// value kinds), no values; repairs carry only the exception lines of
    /// stderr; the explanation sees the result's keys and value types only.
    Schema,
    /// File names and sizes only; repairs say only what kind of failure
    /// happened (the exception type); no model explanation (the template is used).
    None,
}

/// `model`: what the model provider may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelPolicy {
    /// How much of the data leaves for the model (`preview`, `schema`, `none`).
    pub(crate) data: DataLevel,
}

/// The policy file format version. Only `1` exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Version;

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(1)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        if n == 1 {
            Ok(Version)
        } else {
            Err(de::Error::custom(format!(
                "policy version `{n}` is not supported; write `version: 1`"
            )))
        }
    }
}

/// A whole policy (`version: 1`). Every omitted field takes a safe default;
/// [`Policy::default`] is the data-analysis policy of `policies/default.yml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// File format version; always 1.
    pub version: Version,
    /// Who may trigger runs.
    pub who: Who,
    /// The container.
    pub sandbox: SandboxPolicy,
    /// Which workspace files may be inputs.
    pub inputs: Inputs,
    /// What the code may contain.
    pub code: CodePolicy,
    /// How many generate/repair attempts a request gets (1..=10).
    pub attempts: Attempts,
    /// What results must look like.
    pub output: Output,
    /// Whether the bot explains the result in words next to the numbers.
    pub explain: bool,
    /// Who may approve escalated code.
    pub escalation: Escalation,
    /// What the model provider may see of the data.
    pub model: ModelPolicy,
    /// Where the policy came from (not part of the file).
    #[serde(skip)]
    pub origin: Option<PathBuf>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            version: Version,
            who: Who::default(),
            sandbox: SandboxPolicy::default(),
            inputs: Inputs::default(),
            code: CodePolicy::default(),
            attempts: Attempts::default(),
            output: Output::default(),
            explain: true,
            escalation: Escalation::default(),
            model: ModelPolicy::default(),
            origin: None,
        }
    }
}
