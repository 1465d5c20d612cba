//! The report: one plain value that describes a whole request, rendered by
//! every front end (JSON, Markdown for GitHub, text for a terminal).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::TokenUsage;
use crate::policy::Verdict;
use crate::sandbox::Outcome;

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    /// The code ran and its result was validated.
    Ok,
    /// The request stopped without a valid result; `stop_reason` says why.
    Failed,
    /// The code waits for a human approval.
    NeedsApproval,
}

impl ReportStatus {
    /// The terminal's exit status for this status (0 ok, 1 failed, 3 needs
    /// approval): [`crate::status::Status::exit_code`] with the CLI front end.
    pub fn exit_code(self) -> i32 {
        crate::status::Status::from(self).exit_code(crate::status::Front::Cli)
    }
}

impl From<ReportStatus> for crate::status::Status {
    fn from(s: ReportStatus) -> Self {
        use crate::status::Status;
        match s {
            ReportStatus::Ok => Status::Ok,
            ReportStatus::Failed => Status::Failed,
            ReportStatus::NeedsApproval => Status::NeedsApproval,
        }
    }
}

/// An input file given to the code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputSummary {
    /// Name under `/data`.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Hex SHA-256.
    pub sha256: String,
}

/// One generate → check → run → validate round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// 1-based attempt number.
    pub number: u32,
    /// The plan the model gave with this code, if any.
    pub plan: Option<String>,
    /// The code of this attempt.
    pub code: String,
    /// Hex SHA-256 of `code`.
    pub code_sha256: String,
    /// The policy verdict.
    pub verdict: Option<Verdict>,
    /// The sandbox outcome, when the code ran.
    pub outcome: Option<Outcome>,
    /// The result parsed from the output, valid or not.
    pub result: Option<serde_json::Value>,
    /// Schema or parse errors, each with its instance path.
    pub validation_errors: Vec<String>,
    /// Why this attempt did not produce the answer (None when it did).
    pub failure: Option<String>,
    /// Tokens used to produce this attempt.
    pub usage: TokenUsage,
}

/// The whole story of one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// What was asked (sanitized), if a goal was given.
    pub goal: Option<String>,
    /// The plan the model gave.
    pub plan: Option<String>,
    /// How it ended.
    pub status: ReportStatus,
    /// Why it stopped, when it did not end `ok`.
    pub stop_reason: Option<String>,
    /// The validated result.
    pub result: Option<serde_json::Value>,
    /// A short explanation grounded in the result.
    pub explanation: Option<String>,
    /// Every attempt, in order.
    pub attempts: Vec<Attempt>,
    /// The final (executed or waiting) code.
    pub code: Option<String>,
    /// Hex SHA-256 of `code`.
    pub code_sha256: Option<String>,
    /// The policy verdict on the final code.
    pub verdict: Option<Verdict>,
    /// The sandbox outcome of the final code.
    pub outcome: Option<Outcome>,
    /// Input files given to the code.
    pub inputs: Vec<InputSummary>,
    /// The policy in force (its file path or name).
    pub policy: Option<String>,
    /// Tokens used in all model calls.
    pub usage: TokenUsage,
    /// Milliseconds spent per stage (`generate`, `check`, `execute`,
    /// `validate`, `explain`), in all (`total`), waiting on the model
    /// (`model`: the calls, retries included) and on the sandbox (`sandbox`:
    /// container preparation not hidden behind generation, execution,
    /// removal), and the loop's own time, `loop_overhead` = total − model −
    /// sandbox, summed over the attempts.
    pub timings_ms: BTreeMap<String, u64>,
    /// What determines the final run's result and hashes of what came out
    /// (`None` when no code ran); `compute-bot replay` repeats it.
    #[serde(default)]
    pub record: Option<crate::record::RunRecord>,
}
