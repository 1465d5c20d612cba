//! The `output` section: the schema results must match and the checks
//! beyond it.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::files::Files;

/// `output`: what results must look like.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Output {
    /// The JSON Schema results must match. In the file it is an inline
    /// mapping or a path (relative to the policy file) to a YAML or JSON
    /// file; after loading it is always the resolved schema.
    pub schema: serde_json::Value,
    /// How many times the code runs, each in a fresh container (1..=10). A
    /// result that changes between runs is flagged, not posted as fact.
    pub repeat: Repeat,
    /// Python expressions (or `assert` statements) over `result`, run in
    /// the sandbox after the schema validation, e.g.
    /// `0 <= result["average_conversion"] <= 1`.
    pub checks: Vec<String>,
    /// What a failed check does: `stop` (default) or `escalate`.
    pub on_check_failure: OnCheckFailure,
    /// `independent`: the model writes a second program without seeing the
    /// first; both run and their results must agree within `tolerance`.
    pub verify: VerifyMode,
    /// Largest difference two numbers may have and still agree, absolute or
    /// relative to the larger one (default 1e-9).
    pub tolerance: f64,
    /// The files the code leaves in `/out`: the branch they are committed
    /// to and the caps on what is shown (see [`Files`]).
    pub files: Files,
}

impl Default for Output {
    fn default() -> Self {
        Output {
            schema: serde_json::json!({"type": "object"}),
            repeat: Repeat::default(),
            checks: Vec::new(),
            on_check_failure: OnCheckFailure::default(),
            verify: VerifyMode::default(),
            tolerance: 1e-9,
            files: Files::default(),
        }
    }
}

/// Most runs `output.repeat` allows.
const MAX_REPEAT: u8 = 10;

/// `output.repeat`: how many runs in all (1..=[`MAX_REPEAT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Repeat(u8);

impl Repeat {
    /// `n` runs, when 1 ≤ n ≤ [`MAX_REPEAT`].
    pub fn new(n: u8) -> Option<Repeat> {
        (1..=MAX_REPEAT).contains(&n).then_some(Repeat(n))
    }

    /// The number of runs.
    pub fn get(self) -> u8 {
        self.0
    }
}

impl Default for Repeat {
    fn default() -> Self {
        Repeat(1)
    }
}

impl<'de> Deserialize<'de> for Repeat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        u8::try_from(n).ok().and_then(Repeat::new).ok_or_else(|| {
            de::Error::custom(format!(
                "repeat `{n}` is out of range; write a number from 1 to {MAX_REPEAT} (each is one more sandbox run)"
            ))
        })
    }
}

/// `output.on_check_failure`: what a failed `output.checks` entry does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnCheckFailure {
    /// Stop without a result, showing the failed assertion.
    #[default]
    Stop,
    /// Ask a human: the code waits for `/compute approve`.
    Escalate,
}

/// `output.verify`: whether a second, independent program must agree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyMode {
    /// No second program.
    #[default]
    None,
    /// The model writes a second program without seeing the first.
    Independent,
}
