//! The run record: everything that determines a result, in one small value
//! that goes into every report and (compactly) into every posted comment, so
//! that `compute-bot replay` can repeat the run and check the answer.
//!
//! Hashes are hex SHA-256: of the exact code, of each input's bytes, of the
//! captured stdout (UTF-8 text), of each file left in `/out` and of the result in canonical JSON (object
//! keys sorted, no whitespace; see [`canonical_json`]). The policy hash is of
//! the effective policy (`compute-bot policy check` prints it), so two files
//! that differ only in comments or defaults hash alike.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod files;

pub use files::RecordedFile;
pub(crate) use files::file_differences;

use crate::policy::Policy;
use crate::sandbox::{BASE_ENV, Limits, Outcome, RuntimeRules, sha256_hex};

/// The record format version.
const RECORD_VERSION: u32 = 1;

/// Start of the hidden marker that carries the record in a comment.
pub(crate) const RECORD_MARKER_START: &str = "<!-- compute-bot:record ";
/// End of the hidden record marker.
const RECORD_MARKER_END: &str = " -->";

/// One input file as the code saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RecordedInput {
    /// Name under `/data`.
    pub(crate) name: String,
    /// Size in bytes.
    pub(crate) size: u64,
    /// Hex SHA-256 of the bytes.
    pub(crate) sha256: String,
    /// Where the file came from (relative to the working directory or the
    /// GitHub workspace), when the front end knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path: Option<String>,
    /// For data the bot fetched (a `github:` source): where the snapshot
    /// is kept, `<branch>@<commit sha>:<path>` on the files branch or
    /// `artifact` (the run's artifact only), so a replay reads the same bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) snapshot: Option<String>,
    /// For data the bot fetched: when (RFC 3339, UTC) — for data read back
    /// from an earlier run's snapshot, when that run fetched it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fetched_at: Option<String>,
}

/// The image the code ran in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RecordedImage {
    /// The reference asked for (tag or digest).
    pub(crate) reference: String,
    /// The image id (`sha256:...`) the engine resolved it to.
    pub(crate) id: String,
    /// Repository digests (empty for a locally built image).
    #[serde(default)]
    pub(crate) digests: Vec<String>,
}

/// How and where the run executed: interpreter, engine, container runtime
/// and environment, and how the run went (kept under `runtime` in the
/// record; not to be confused with [`crate::sandbox::Runtime`], the OCI
/// runtime alone).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Execution {
    /// The Python version, from the image's `org.compute-bot.python` label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    python: Option<String>,
    /// The Docker engine version and API version (`20.10.24 (API 1.41)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The OCI runtime the code ran under (`runc`, `runsc`); replay uses it.
    /// `None` in records written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) container_runtime: Option<crate::sandbox::Runtime>,
    /// The execution environment that ran the code — the policy's first or
    /// its reserve, with the engine's address and why — which replay uses.
    /// `None` in records written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) environment: Option<crate::sandbox::Environment>,
    /// How the run ended (`ok`, `error`, ...).
    pub(crate) status: String,
    /// Exit code of the code's process.
    #[serde(default)]
    exit_code: Option<i64>,
    /// Milliseconds the code ran.
    pub(crate) duration_ms: u64,
    /// How the kernel saw the code (`notify`: every open, socket and start;
    /// `errno`: starts refused, opens only as the interpreter reported them):
    /// who saw each fact follows from it ([`crate::sandbox::sources`]).
    /// `None` in records written before the second seccomp stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) supervision: Option<crate::sandbox::Supervision>,
}

/// Everything that determines one run's result, and hashes of what came out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Record format version ([`RECORD_VERSION`]).
    version: u32,
    /// The compute-bot version that ran it.
    pub(crate) bot_version: String,
    /// Hex SHA-256 of the exact code.
    pub(crate) code_sha256: String,
    /// The input files, in the order given.
    pub(crate) inputs: Vec<RecordedInput>,
    /// The image.
    pub(crate) image: RecordedImage,
    /// Interpreter, engine, status and duration.
    pub runtime: Execution,
    /// The limits the sandbox enforced.
    pub(crate) limits: Limits,
    /// The runtime rules the runner applied.
    pub(crate) rules: RuntimeRules,
    /// Hex SHA-256 of the effective policy, when a policy was in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) policy_sha256: Option<String>,
    /// The environment given to the code (the sandbox's fixed environment
    /// plus what the run named; nothing of the bot's own).
    pub(crate) env: BTreeMap<String, String>,
    /// Hex SHA-256 of the captured stdout.
    pub(crate) stdout_sha256: String,
    /// Hex SHA-256 of the result in canonical JSON, when a result was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_sha256: Option<String>,
    /// The files the code left in `/out` (name, size, sha256), in the order
    /// collected; `None` in records written before files were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<RecordedFile>>,
    /// Further runs of the same code (`output.repeat`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<RepeatRun>,
    /// The policy's `output.checks` and how each went.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckOutcome>,
    /// The independent second program (`output.verify: independent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// The model that wrote the code (provider, model name, whether it was
    /// the fallback); none for exact code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::model::ModelId>,
    /// The earlier answer a follow-up built on (its comment's URL); the
    /// record itself holds everything a replay needs (code hash, inputs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The result itself, only in a comment's marker and only when small
    /// (so that a replay can show a diff); the report has it in `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// A session's steps in the order they ran (each step's code and stdout
    /// hashes), which a replay re-runs in one fresh session; empty for one
    /// program and in records written before sessions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<RecordedStep>,
}

/// One step of a recorded session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedStep {
    /// Hex SHA-256 of the step's exact code.
    pub code_sha256: String,
    /// Hex SHA-256 of the whole stdout it printed.
    pub stdout_sha256: String,
    /// True when the step raised or otherwise did not run to its end (a
    /// follow-up continues only from the steps that ran without an error).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
}

/// Largest result (canonical JSON characters) carried in a comment marker.
const MARKER_RESULT_MAX: usize = 4_000;

/// Hex SHA-256 of the effective policy.
pub fn policy_sha256(policy: &Policy) -> String {
    sha256_hex(policy.to_effective_yaml().as_bytes())
}

/// A JSON value with every object's keys sorted (recursively).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let s: BTreeMap<&String, Value> = m.iter().map(|(k, v)| (k, sorted(v))).collect();
            let mut out = serde_json::Map::new();
            for (k, v) in s {
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        _ => v.clone(),
    }
}

/// Canonical JSON text of a result: keys sorted, no whitespace. The result
/// hash is taken over these bytes.
fn canonical_json(v: &Value) -> String {
    let s = sorted(v);
    // serde_json may keep insertion order (feature `preserve_order`); the
    // keys were inserted sorted, so the text is canonical either way.
    serde_json::to_string(&s).unwrap_or_default()
}

/// Hex SHA-256 of a result in canonical JSON.
pub fn result_sha256(v: &Value) -> String {
    sha256_hex(canonical_json(v).as_bytes())
}

/// The environment the code is given: the sandbox's fixed environment plus `extra`.
pub(crate) fn code_env(extra: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = BASE_ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

/// The engine's version, as `20.10.24 (API 1.41)`; `None` when it cannot be asked.
pub(crate) async fn engine_version(sandbox: &dyn crate::sandbox::Executor) -> Option<String> {
    sandbox.engine().await.ok()?.record_line()
}

impl RunRecord {
    /// The record of one finished run of `code_sha256` with these inputs.
    pub(crate) fn of_outcome(
        outcome: &Outcome,
        inputs: &[RecordedInput],
        rules: &RuntimeRules,
        env: &BTreeMap<String, String>,
        result: Option<&Value>,
    ) -> RunRecord {
        RunRecord {
            version: RECORD_VERSION,
            bot_version: env!("CARGO_PKG_VERSION").to_string(),
            code_sha256: outcome.code_sha256.clone(),
            inputs: inputs.to_vec(),
            image: RecordedImage {
                reference: outcome.image.reference.clone(),
                id: outcome.image.id.clone(),
                digests: outcome.image.digests.clone(),
            },
            runtime: Execution {
                python: outcome.image.labels.get("org.compute-bot.python").cloned(),
                engine: None,
                container_runtime: outcome.environment.as_ref().map(|e| e.runtime),
                environment: outcome.environment.clone(),
                status: outcome.status.as_str().to_string(),
                exit_code: outcome.exit_code,
                duration_ms: outcome.duration_ms,
                supervision: outcome.audit.kernel.as_ref().map(|k| k.mode),
            },
            limits: outcome.limits.clone(),
            rules: rules.clone(),
            policy_sha256: None,
            env: env.clone(),
            stdout_sha256: sha256_hex(outcome.stdout.as_bytes()),
            result_sha256: result.map(result_sha256),
            files: Some(outcome.artifacts.iter().map(RecordedFile::of).collect()),
            repeats: Vec::new(),
            checks: Vec::new(),
            verification: None,
            model: None,
            parent: None,
            result: None,
            steps: Vec::new(),
        }
    }

    /// The same record without the bulky parts (the verification program's
    /// code and result), for a comment's hidden marker.
    fn compact(&self) -> RunRecord {
        let mut r = self.clone();
        if let Some(v) = r.verification.as_mut() {
            v.code = None;
            v.result = None;
        }
        for c in &mut r.checks {
            c.error = c.error.as_ref().map(|e| e.chars().take(300).collect());
        }
        r
    }

    /// The hidden comment marker carrying the compact record (and `result`
    /// when small) as JSON. `<`
    /// and `>` are written as JSON escapes, so the marker cannot be closed
    /// early or open HTML.
    pub(crate) fn marker(&self, result: Option<&Value>) -> String {
        let mut r = self.compact();
        r.result = result
            .filter(|v| canonical_json(v).chars().count() <= MARKER_RESULT_MAX)
            .cloned();
        let json = serde_json::to_string(&r).unwrap_or_default();
        let json = json.replace('<', "\\u003c").replace('>', "\\u003e");
        format!("{RECORD_MARKER_START}{json}{RECORD_MARKER_END}")
    }

    /// Reads the record from a comment body's hidden marker.
    pub fn from_comment(body: &str) -> Result<RunRecord, String> {
        let start = body.find(RECORD_MARKER_START).ok_or_else(|| {
            "the comment has no run record (no `<!-- compute-bot:record ... -->` marker); \
             only result comments of compute-bot 0.1 or later carry one"
                .to_string()
        })? + RECORD_MARKER_START.len();
        let rest = &body[start..];
        let end = rest
            .find(RECORD_MARKER_END)
            .ok_or("the comment's run record marker is not closed (`-->` missing)")?;
        serde_json::from_str(&rest[..end])
            .map_err(|e| format!("the comment's run record is not readable: {e}"))
    }
}

/// The visible one-line "Reproduce" under a result: the command that
/// replays it (`command` is the comment command, e.g. `/compute`).
pub(crate) fn reproduce_line(command: &str) -> String {
    format!(
        "\n**Reproduce:** `compute-bot replay --comment <this comment's link>` with the inputs \
         at this commit, or comment `{} replay` here.\n",
        command.replace('`', "'")
    )
}

/// One further run of the same code in a fresh container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepeatRun {
    /// 2-based run number (run 1 is the original).
    pub run: u32,
    /// How the run ended.
    pub(crate) status: String,
    /// Hex SHA-256 of its stdout.
    pub(crate) stdout_sha256: String,
    /// Hex SHA-256 of its result in canonical JSON, when one was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_sha256: Option<String>,
    /// Milliseconds the code ran.
    pub(crate) duration_ms: u64,
    /// How its result differs from run 1 (empty when equal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
}

/// One `output.checks` entry and how it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckOutcome {
    /// The check as written in the policy.
    pub(crate) check: String,
    /// True when it held.
    pub passed: bool,
    /// Why it failed (`the expression is false`, `AssertionError: ...`,
    /// `KeyError: 'x'`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The independent second program and whether it agreed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// True when both results agree within `tolerance`.
    pub agreed: bool,
    /// The tolerance used (absolute, or relative to the larger number).
    pub tolerance: f64,
    /// Hex SHA-256 of the second program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) code_sha256: Option<String>,
    /// The second program (left out of the comment's compact record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Where the two results differ.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) differences: Vec<String>,
    /// Why the second program gave no comparable result, if it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) problem: Option<String>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"d":2,"c":3}],"x":null}}"#).unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#
        );
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#).unwrap();
        assert_eq!(result_sha256(&a), result_sha256(&b));
        let c: Value =
            serde_json::from_str(r#"{"a":{"x":null,"y":[1,{"c":3,"d":3}]},"b":1}"#).unwrap();
        assert_ne!(result_sha256(&a), result_sha256(&c));
    }

    /// A record with every part set (the tests of other modules use it).
    pub(crate) fn sample() -> RunRecord {
        RunRecord {
            version: RECORD_VERSION,
            bot_version: "0.1.0".into(),
            code_sha256: "ab".repeat(32),
            inputs: vec![RecordedInput {
                name: "x-->y<script>.csv".into(),
                size: 3,
                sha256: "cd".repeat(32),
                path: Some("data/x-->y<script>.csv".into()),
                snapshot: None,
                fetched_at: None,
            }],
            image: RecordedImage::default(),
            runtime: Execution::default(),
            limits: Limits::default(),
            rules: RuntimeRules::default(),
            policy_sha256: None,
            env: code_env(&BTreeMap::new()),
            stdout_sha256: "ef".repeat(32),
            result_sha256: None,
            files: None,
            repeats: Vec::new(),
            checks: Vec::new(),
            steps: vec![RecordedStep {
                code_sha256: "12".repeat(32),
                stdout_sha256: "34".repeat(32),
                error: false,
            }],
            verification: None,
            model: Some(crate::model::ModelId {
                provider: "anthropic".into(),
                model: "claude-x".into(),
                fallback: true,
            }),
            parent: None,
            result: None,
        }
    }

    #[test]
    fn the_marker_survives_a_round_trip_and_cannot_be_closed_early() {
        let r = sample();
        let m = r.marker(None);
        assert_eq!(m.matches("-->").count(), 1, "{m}");
        assert!(!m.contains("<script"));
        let body = format!("hello\n{m}\n### result");
        assert_eq!(RunRecord::from_comment(&body).unwrap(), r);
        let err = RunRecord::from_comment("no marker").unwrap_err();
        assert!(err.contains("no run record"), "{err}");
    }
}
