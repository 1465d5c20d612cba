//! The report: one plain value that describes a whole request, rendered by
//! every front end (JSON, Markdown for GitHub, text for a terminal).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{ModelId, TokenUsage};
use crate::policy::{Policy, Prices, Verdict};
use crate::record::{RecordedInput, RunRecord};
use crate::sandbox::{Executor, Outcome, Runtime};

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
    /// A plan only (`/compute plan`): code and verdict, nothing ran.
    Planned,
    /// A configuration error stopped the request (e.g. the model provider
    /// refused the key or the model name); `stop_reason` says what to fix.
    Error,
}

impl ReportStatus {
    /// The word for people: `ok`, `failed`, `needs approval`, `error`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            ReportStatus::Ok => "ok",
            ReportStatus::Failed => "failed",
            ReportStatus::NeedsApproval => "needs approval",
            ReportStatus::Planned => "planned",
            ReportStatus::Error => "error",
        }
    }

    /// The terminal's exit status for this status (0 ok, 1 failed, 2 error, 3
    /// needs approval): [`crate::status::Status::exit_code`] with the CLI front end.
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
            ReportStatus::Planned => Status::Planned,
            ReportStatus::Error => Status::Error,
        }
    }
}

/// An input file given to the code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputSummary {
    /// Name under `/data`.
    pub name: String,
    /// Size in bytes.
    pub(crate) size: u64,
    /// Hex SHA-256.
    pub(crate) sha256: String,
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
    /// The model that wrote this attempt's code (none for exact code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelId>,
}

/// What the model meant a step to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A look: its output goes back to the model.
    Look,
    /// The final step: its printed JSON is the result.
    Final,
}

impl StepKind {
    /// The word for people and the model: `look`, `final`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            StepKind::Look => "look",
            StepKind::Final => "final",
        }
    }
}

/// One step of a session that ran in the sandbox (a refused step did not
/// run and is only an attempt): its exact code, bounded output and facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// 1-based step number in the session's interpreter.
    pub number: u32,
    /// The attempt (model turn) that wrote it; 0 for a step replayed from
    /// the earlier answer a follow-up continues.
    pub attempt: u32,
    /// What the model meant it to do.
    pub kind: StepKind,
    /// True for the step whose output is the validated result.
    #[serde(default)]
    pub result: bool,
    /// The exact code that ran.
    pub code: String,
    /// Hex SHA-256 of `code`.
    pub code_sha256: String,
    /// Its stdout, head and tail within a budget.
    pub stdout: String,
    /// Its stderr (the traceback), head and tail within a budget.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Hex SHA-256 of the whole stdout it printed.
    pub stdout_sha256: String,
    /// The value of its last expression, as a notebook shows `Out[n]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// How it ended.
    pub status: crate::sandbox::RunStatus,
    /// Milliseconds its code ran.
    pub duration_ms: u64,
    /// The files it left in `/out` (a final step's are collected).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
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
    /// The steps of a session that ran, in order (empty for one program).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    /// For a follow-up on a session answer: one line on how this session
    /// began, continued from the earlier answer's state (its steps
    /// replayed) or fresh, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continued: Option<String>,
    /// The outcomes of the steps replayed from the earlier answer (the
    /// steps of attempt 0, in order), for the run's notebook; not written
    /// to the JSON report (the steps are).
    #[serde(skip)]
    pub replayed: Vec<Outcome>,
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
    /// HTTP requests sent to the model providers for this report (retries,
    /// failed requests and the fallback's included).
    #[serde(default)]
    pub model_requests: u64,
    /// The policy's prices (`model.prices`), when it sets them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
    /// Dollars the tokens cost at `prices`; `None` without prices or when a
    /// token count is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
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

impl Report {
    /// The model that wrote the final code: that of the last attempt with
    /// this code (none for exact code).
    pub fn code_model(&self) -> Option<&ModelId> {
        let sha = self.code_sha256.as_deref()?;
        self.attempts
            .iter()
            .rev()
            .find(|a| a.code_sha256 == sha)?
            .model
            .as_ref()
    }

    /// The code that ran and its outcome, cell by cell: each step of a
    /// session (its attempt's code and outcome; a step replayed from an
    /// earlier answer, its outcome in `replayed`), else the final code and
    /// outcome; empty when nothing ran.
    pub(crate) fn executed(&self) -> Vec<(&str, &Outcome)> {
        if self.steps.is_empty() {
            return match (&self.code, &self.outcome) {
                (Some(code), Some(o)) => vec![(code.as_str(), o)],
                _ => Vec::new(),
            };
        }
        let mut replayed = self.replayed.iter();
        self.steps
            .iter()
            .filter_map(|s| {
                let Some(n) = s.attempt.checked_sub(1) else {
                    return Some((s.code.as_str(), replayed.next()?));
                };
                let a = self.attempts.get(n as usize)?;
                Some((s.code.as_str(), a.outcome.as_ref()?))
            })
            .collect()
    }

    /// The record of a report's final run, or `None` when no code ran.
    /// The result hash is of the validated result, else of the last
    /// attempt's parsed (invalid) result.
    fn run_record(&self, policy: &Policy) -> Option<RunRecord> {
        let report = self;
        let outcome = report.outcome.as_ref()?;
        let inputs: Vec<RecordedInput> = report
            .inputs
            .iter()
            .map(|i| RecordedInput {
                name: i.name.clone(),
                size: i.size,
                sha256: i.sha256.clone(),
                path: None,
                snapshot: None,
                fetched_at: None,
            })
            .collect();
        let result = report
            .result
            .as_ref()
            .or_else(|| report.attempts.last().and_then(|a| a.result.as_ref()));
        let mut r = RunRecord::of_outcome(
            outcome,
            &inputs,
            &policy.runtime_rules(),
            &crate::record::code_env(&BTreeMap::new()),
            result,
        );
        r.policy_sha256 = Some(crate::record::policy_sha256(policy));
        r.model = report.code_model().cloned();
        // The code is the report's (exact code in cells: all of it; a
        // session: its final step), and a session's steps are recorded.
        if let Some(sha) = &report.code_sha256 {
            r.code_sha256 = sha.clone();
        }
        r.steps = report
            .steps
            .iter()
            .map(|s| crate::record::RecordedStep {
                code_sha256: s.code_sha256.clone(),
                stdout_sha256: s.stdout_sha256.clone(),
                error: s.status != crate::sandbox::RunStatus::Ok,
            })
            .collect();
        Some(r)
    }

    /// Attaches the record of the report's final run, with the container
    /// runtime it ran under and the engine version (one engine call).
    /// Called once at the end of the loop.
    pub(crate) async fn attach_record(
        &mut self,
        policy: &Policy,
        runtime: Runtime,
        sandbox: &dyn Executor,
    ) {
        let report = self;
        if let Some(mut r) = report.run_record(policy) {
            // The environment's runtime when the outcome names one (a
            // reserve may name another); else the run's.
            r.runtime.container_runtime = r.runtime.container_runtime.or(Some(runtime));
            r.runtime.engine = crate::record::engine_version(sandbox).await;
            // Keep repeat/check/verification results gathered during the loop.
            if let Some(old) = report.record.take() {
                r.repeats = old.repeats;
                r.checks = old.checks;
                r.verification = old.verification;
            }
            report.record = Some(r);
        }
    }

    /// Sets where the snapshot of each fetched input (by name under
    /// `/data`) is kept and when it was fetched (see
    /// [`crate::record::RecordedInput::snapshot`]).
    pub(crate) fn set_input_snapshots(
        &mut self,
        kept: &[(String, String)],
        fetched_at: Option<&str>,
    ) {
        if let Some(r) = self.record.as_mut() {
            for i in &mut r.inputs {
                if let Some((_, at)) = kept.iter().find(|(n, _)| *n == i.name) {
                    i.snapshot = Some(at.clone());
                    i.fetched_at = fetched_at.map(str::to_string);
                }
            }
        }
    }

    /// Fills in where each input came from, matching by file name (front ends
    /// know the paths; the loop only sees names).
    pub(crate) fn set_input_paths(&mut self, paths: &[(String, String)]) {
        let report = self;
        if let Some(r) = report.record.as_mut() {
            for i in &mut r.inputs {
                if let Some((_, p)) = paths.iter().find(|(n, _)| *n == i.name) {
                    i.path = Some(p.clone());
                }
            }
        }
    }
}
