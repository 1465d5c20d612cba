//! Replaying a recorded run: check the preconditions (the code, every input
//! and the image hash to what the record says), re-run exactly the recorded
//! code with the recorded limits, rules and environment, and compare the
//! stdout, result and file hashes (a file that differs is named).
//!
//! Used by `compute-bot replay` (src/cli/replay.rs) and by `/compute replay`
//! in a GitHub thread (src/github/replay.rs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::admit::{Allow, Workspace, admit_one};
use crate::record::{RunRecord, result_sha256};
use crate::report::Report;
use crate::sandbox::{
    BASE_ENV, DEFAULT_PRELOAD, Environments, Executor, InputFile, Job, Outcome, Runtime,
    SandboxConfig, SandboxError, sha256_hex,
};
use crate::verify::differences;

/// Exit status: the run reproduced.
const EXIT_REPRODUCED: i32 = 0;
/// Exit status: the run gave a different result or stdout.
const EXIT_DIFFERS: i32 = 1;
/// Exit status: a precondition does not hold (code, input, image) or usage error.
pub(crate) const EXIT_MISMATCH: i32 = 2;

/// A recorded run to replay: the record, the exact code and, when known,
/// the original result (for a readable diff).
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The record.
    pub(crate) record: RunRecord,
    /// The code as found (its hash is checked against the record).
    pub(crate) code: String,
    /// The original result, when the source carries it.
    result: Option<Value>,
    /// Where it came from, for messages (`report.json`, a comment URL).
    source: String,
    /// A session's steps: each recorded step's code, found by its hash in
    /// the source (`None` when it is not there); empty for one program.
    pub(crate) steps: Vec<Option<String>>,
}

/// The code of each recorded step, found by its sha256 among `texts` and
/// their `# %%` cells (a report's steps and code; a comment's code blocks,
/// the folded steps among them): the one rule of report files and comments.
fn step_codes(record: &RunRecord, texts: &[String]) -> Vec<Option<String>> {
    let mut candidates: Vec<String> = Vec::new();
    for t in texts {
        let t = t.replace("\r\n", "\n");
        candidates.extend(
            crate::notebook::cells::percent_cells(&t)
                .into_iter()
                .map(|c| c.code),
        );
        candidates.push(t);
    }
    record
        .steps
        .iter()
        .map(|s| {
            candidates
                .iter()
                .find(|c| sha256_hex(c.as_bytes()) == s.code_sha256)
                .cloned()
        })
        .collect()
}

impl Recorded {
    /// Reads a JSON report written by `compute-bot run --format json` or the
    /// action's `report_path`.
    pub(crate) fn from_report_file(path: &Path) -> Result<Recorded, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("report `{}` cannot be read: {e}", path.display()))?;
        let report: Report = serde_json::from_str(&text).map_err(|e| {
            format!(
                "report `{}` is not a compute-bot JSON report ({e}); write one with `compute-bot run ... --format json`",
                path.display()
            )
        })?;
        let source = path.display().to_string();
        let record = report.record.clone().ok_or_else(|| {
            format!("report `{source}` has no run record: no code ran in it (status {:?}), so there is nothing to replay", report.status)
        })?;
        let code = report
            .code
            .clone()
            .ok_or_else(|| format!("report `{source}` has no code"))?;
        let result = report
            .result
            .clone()
            .or_else(|| report.attempts.last().and_then(|a| a.result.clone()));
        let mut texts: Vec<String> = report.steps.iter().map(|s| s.code.clone()).collect();
        texts.push(code.clone());
        let steps = step_codes(&record, &texts);
        Ok(Recorded {
            record,
            code,
            result,
            source,
            steps,
        })
    }

    /// Reads the record from a posted comment's hidden marker and the code
    /// from its code block (the one whose sha256 the record names).
    pub fn from_comment_body(body: &str, source: &str) -> Result<Recorded, String> {
        let record = RunRecord::from_comment(body)?;
        let blocks = python_blocks(body);
        let matching = blocks.iter().find_map(|b| {
            [b.clone(), b.replace("\r\n", "\n")]
                .into_iter()
                .find(|c| sha256_hex(c.as_bytes()) == record.code_sha256)
        });
        // A block that matches nothing is tampered code: hand it on so the
        // code-hash precondition names both hashes.
        let code = match (matching, blocks.into_iter().next()) {
            (Some(c), _) => c,
            (None, Some(first)) => first.replace("\r\n", "\n"),
            (None, None) => {
                return Err(format!(
                    "the comment {source} shows no code (it was left out to fit GitHub's limit); \
                     replay the JSON report instead (the action's `report_path` output)"
                ));
            }
        };
        let result = record.result.clone();
        let steps = step_codes(&record, &python_blocks(body));
        Ok(Recorded {
            record,
            code,
            result,
            source: source.to_string(),
            steps,
        })
    }
}

impl Recorded {
    /// A session's steps that ran without an error, as exact code in
    /// `# %%` cells (each step one cell, in order, the last the step that
    /// gave the result): what a watch of a session answer runs, as steps
    /// under a policy that runs sessions, else as one program. `None` for
    /// one program; why not when a step's code is not found by its hash or
    /// cannot be written as a cell of its own.
    pub(crate) fn session_cells(&self) -> Result<Option<String>, String> {
        if self.record.steps.is_empty() {
            return Ok(None);
        }
        let mut codes = Vec::new();
        for (i, (step, code)) in self.record.steps.iter().zip(&self.steps).enumerate() {
            if step.error {
                continue;
            }
            let code = code.as_deref().ok_or_else(|| {
                format!(
                    "the code of step {} is not in {} (no block hashes to the recorded sha256)",
                    i + 1,
                    self.source
                )
            })?;
            codes.push((i + 1, code.trim_end()));
        }
        let joined: String = codes
            .iter()
            .map(|(_, c)| format!("# %%\n{c}\n"))
            .collect::<Vec<_>>()
            .join("\n");
        let cells = crate::notebook::cells::percent_cells(&joined);
        let same = cells.len() == codes.len()
            && cells
                .iter()
                .zip(&codes)
                .all(|(a, (_, b))| a.code.trim_end() == *b);
        if !same {
            return Err(
                "a step's code holds a `# %%` line or runs nothing, so the steps cannot be written \
as cells of their own"
                    .to_string(),
            );
        }
        Ok(Some(joined))
    }
}

/// The contents of every ```` ```python ```` fenced block, in order.
fn python_blocks(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in body.split_inclusive('\n') {
        let t = line.trim_end_matches(['\n', '\r']);
        match &mut open {
            None => {
                let ticks: String = t.chars().take_while(|c| *c == '`').collect();
                if ticks.len() >= 3 && t[ticks.len()..].trim() == "python" {
                    open = Some((ticks, String::new()));
                }
            }
            Some((fence, buf)) => {
                if t.trim_end() == fence.as_str() {
                    out.push(std::mem::take(buf));
                    open = None;
                } else {
                    buf.push_str(line);
                }
            }
        }
    }
    out
}

/// Checks the code's hash against the record.
pub fn code_mismatch(rec: &Recorded) -> Option<String> {
    let actual = sha256_hex(rec.code.as_bytes());
    (actual != rec.record.code_sha256).then(|| {
        format!(
            "code: its sha256 is {actual}, the record says {}; the code was changed after the run \
             (or the record belongs to other code), so this is not the run that was recorded",
            rec.record.code_sha256
        )
    })
}

/// True when the path `given` names the recorded input `name`: it ends with
/// it (`sales.csv`; the bot's fetched data, `github/pulls.csv`, as kept in
/// the run's artifact and on the files branch under `runs/<run>/`).
fn names_input(given: &Path, name: &str) -> bool {
    let want: Vec<_> = Path::new(name).components().rev().collect();
    let have: Vec<_> = given.components().rev().take(want.len()).collect();
    !want.is_empty() && want == have
}

/// What a replay does with an input whose sha256 differs from the record's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangedInputs {
    /// A precondition that does not hold (exit 2): restore the recorded
    /// version, or replay with `--changed-inputs`.
    Refuse,
    /// Replay on the current file (`compute-bot replay --changed-inputs`);
    /// the verdict names each changed input.
    Run,
}

/// An input whose bytes changed since the run: where it was found, and
/// the recorded and current sha256 and size. A precondition, or with
/// `--changed-inputs` a replay on the current file that the verdict names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ChangedInput {
    /// The input's name under `/data`, as recorded.
    pub(crate) name: String,
    /// Where the current file was found (as given, or under the workspace).
    pub(crate) path: String,
    /// The sha256 the record names.
    pub(crate) recorded_sha256: String,
    /// The current file's sha256.
    pub(crate) sha256: String,
    /// The size the record names, in bytes.
    pub(crate) recorded_size: u64,
    /// The current file's size in bytes.
    pub(crate) size: u64,
}

impl ChangedInput {
    /// The precondition that does not hold: both hashes and sizes, and to
    /// restore the recorded version; `or` adds another way out.
    fn problem(&self, or: &str) -> String {
        format!(
            "input `{}` (`{}`): its sha256 is {} ({} bytes), the record says {} ({} bytes); \
             the file changed since the run — restore the recorded version (check out the commit \
             that ran){or}",
            self.name, self.path, self.sha256, self.size, self.recorded_sha256, self.recorded_size
        )
    }

    /// The verdict's note for a replay on the current file: recorded → now.
    fn note(&self) -> String {
        format!(
            "input `{}` (`{}`) changed since the run: sha256 {} ({} bytes) recorded → {} ({} bytes) \
             now; this replay ran on the current file",
            self.name, self.path, self.recorded_sha256, self.recorded_size, self.sha256, self.size
        )
    }
}

/// What `compute-bot replay` adds to a changed input's precondition: the
/// flag that runs on the current file instead.
const CHANGED_INPUTS_HINT: &str = ", or pass --changed-inputs to replay on the current file and \
     see where the output (for a session, which step) first differs";

/// Finds each recorded input: a `--input` whose path ends with its name
/// (`sales.csv`, `…/github/pulls.csv`), else the recorded path under
/// `workspace`, else `workspace/<name>`; admits the one
/// found (inside the workspace after symlinks: [`crate::admit`]) and checks
/// its size and sha256. `given` are absolute or relative to the current
/// directory, recorded paths relative to `workspace`. Returns the files in
/// recorded order and, with [`ChangedInputs::Run`], those whose sha256
/// differs from the record's (sent as they are now); or every problem (a
/// changed input is one with [`ChangedInputs::Refuse`]).
pub(crate) fn resolve_inputs(
    record: &RunRecord,
    given: &[PathBuf],
    workspace: &Path,
    on_changed: ChangedInputs,
) -> Result<(Vec<InputFile>, Vec<ChangedInput>), Vec<String>> {
    let mut problems = Vec::new();
    let ws = match Workspace::named(workspace) {
        Ok(ws) => Some(ws),
        Err(e) => {
            problems.push(e);
            None
        }
    };
    let mut found = Vec::new();
    let fetched = record.inputs.iter().any(|i| i.name.contains('/'));
    for g in given {
        if !record.inputs.iter().any(|i| names_input(g, &i.name)) {
            let name = g.file_name().map(|n| n.to_string_lossy().into_owned());
            problems.push(format!(
                "input `{}`: the recorded run had no input named `{}` (it had: {}){}",
                g.display(),
                name.unwrap_or_default(),
                names(record),
                if fetched {
                    "; pass the kept `github:` data by a path ending in its name, e.g. `runs/<run>/github/pulls.csv`"
                } else {
                    ""
                }
            ));
        }
    }
    for i in &record.inputs {
        // (shown in messages, as admitted: absolute or workspace-relative)
        let mut tried: Vec<(PathBuf, String)> = given
            .iter()
            .filter(|g| names_input(g, &i.name))
            .map(|g| (g.clone(), absolute(g)))
            .collect();
        if tried.is_empty() {
            if let Some(p) = i.path.as_deref() {
                tried.push((workspace.join(p), p.to_string()));
            }
            tried.push((workspace.join(&i.name), i.name.clone()));
        }
        let Some((shown, named)) = tried
            .iter()
            .find(|(shown, _)| std::fs::symlink_metadata(shown).is_ok())
        else {
            problems.push(format!(
                "input `{}` is missing: tried {}; pass the recorded file with --input PATH",
                i.name,
                tried
                    .iter()
                    .map(|(p, _)| format!("`{}`", p.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            continue;
        };
        let Some(ws) = &ws else { continue };
        match admit_one(ws, named, Allow::Anything).and_then(|(target, _)| {
            InputFile::hash_file(i.name.clone(), &target)
                .map_err(|e| format!("cannot be read ({e})"))
        }) {
            Ok(file) => found.push((shown.display().to_string(), file)),
            Err(problem) => problems.push(format!(
                "input `{}` (`{}`) {problem}",
                i.name,
                shown.display()
            )),
        }
    }
    let (files, changed) = match_inputs(record, found);
    if on_changed == ChangedInputs::Refuse {
        problems.extend(changed.iter().map(|c| c.problem(CHANGED_INPUTS_HINT)));
    }
    if problems.is_empty() {
        Ok((files, changed))
    } else {
        Err(problems)
    }
}

/// `p` as an absolute path (relative to the current directory).
fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// Matches found files (`(where it was found, file)`) with the recorded
/// inputs of the same name: every file in recorded order, and those whose
/// sha256 differs from the record's.
fn match_inputs(
    record: &RunRecord,
    found: Vec<(String, InputFile)>,
) -> (Vec<InputFile>, Vec<ChangedInput>) {
    let mut files = Vec::new();
    let mut changed = Vec::new();
    for i in &record.inputs {
        let Some((path, file)) = found.iter().find(|(_, f)| f.name == i.name) else {
            continue;
        };
        let sha = file.sha256();
        if sha != i.sha256 {
            changed.push(ChangedInput {
                name: i.name.clone(),
                path: path.clone(),
                recorded_sha256: i.sha256.clone(),
                sha256: sha,
                recorded_size: i.size,
                size: file.size(),
            });
        }
        files.push(file.clone());
    }
    (files, changed)
}

/// Compares found files (`(where it was found, file)`) with the recorded
/// inputs of the same name: size and sha256. Returns the files in recorded
/// order, or every mismatch with both hashes.
pub(crate) fn compare_inputs(
    record: &RunRecord,
    found: Vec<(String, InputFile)>,
) -> Result<Vec<InputFile>, Vec<String>> {
    match match_inputs(record, found) {
        (files, changed) if changed.is_empty() => Ok(files),
        (_, changed) => Err(changed.iter().map(|c| c.problem("")).collect()),
    }
}

fn names(record: &RunRecord) -> String {
    if record.inputs.is_empty() {
        return "none".into();
    }
    record
        .inputs
        .iter()
        .map(|i| format!("`{}`", i.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks that the image (the recorded reference, or `image` when given)
/// has the recorded id. Returns the reference to run.
async fn check_image(
    sandbox: &dyn Executor,
    record: &RunRecord,
    image: Option<&str>,
) -> Result<String, String> {
    let reference = image.unwrap_or(&record.image.reference).to_string();
    match sandbox.image(&reference).await {
        Ok(info) if info.id == record.image.id => Ok(reference),
        Ok(info) => Err(format!(
            "image `{reference}`: its id is {}, the record says {}; the image changed since the run \
             (rebuilt or re-tagged). Load the recorded image (`docker load`, or pull {}) and name \
             it with --image",
            info.id,
            record.image.id,
            record
                .image
                .digests
                .first()
                .map(String::as_str)
                .unwrap_or("its recorded digest")
        )),
        Err(e) => Err(format!("image `{reference}`: {e}")),
    }
}

/// The verdict of one replay.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ReplayVerdict {
    /// True when status, stdout and result hashes all match the record.
    pub(crate) reproduced: bool,
    /// `reproduced` or `differs`.
    verdict: &'static str,
    /// Where the record came from.
    source: String,
    /// What differs: hashes, status, and the result diff.
    pub(crate) differences: Vec<String>,
    /// A session's first step whose output differs from the record's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) first_differing_step: Option<u32>,
    /// Notes that do not decide the verdict (a changed input, environment,
    /// engine, bot version).
    pub(crate) notes: Vec<String>,
    /// The inputs whose sha256 differs from the record's, replayed as they
    /// are now (`--changed-inputs`); empty otherwise.
    pub(crate) changed_inputs: Vec<ChangedInput>,
    /// The recorded stdout sha256.
    recorded_stdout_sha256: String,
    /// The replay's stdout sha256.
    stdout_sha256: String,
    /// The recorded result sha256.
    recorded_result_sha256: Option<String>,
    /// The replay's result sha256.
    pub(crate) result_sha256: Option<String>,
    /// The replay's result.
    result: Option<Value>,
    /// Milliseconds the original code ran.
    pub(crate) recorded_duration_ms: u64,
    /// Milliseconds the replayed code ran.
    pub(crate) duration_ms: u64,
    /// Milliseconds the whole replay took (container start to removal).
    total_ms: u64,
    /// The OCI runtime the replay ran under.
    runtime: Runtime,
    /// The replay's sandbox outcome.
    outcome: Outcome,
}

/// Why a replay could not be judged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplayError {
    /// A precondition does not hold (exit 2); one line per problem.
    #[error("cannot replay: {}", .0.join("\n"))]
    Mismatch(Vec<String>),
    /// The sandbox failed.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// The result a run printed (`/out/result.json` or the last stdout line), if
/// it is JSON.
fn read_result(o: &Outcome) -> Option<Value> {
    let v = crate::validate::Validator::new(&Value::Bool(true)).ok()?;
    let file = o
        .artifacts
        .iter()
        .find(|a| a.name == crate::problems::RESULT_FILE)
        .map(|a| a.bytes.as_slice());
    v.validate_output(&o.stdout, file).value
}

/// The runtime a replay runs under: `flag` (`--runtime`), else the
/// recorded one, else `fallback` (the front end's own resolution, for
/// records written before the runtime was recorded).
pub(crate) fn runtime_for(rec: &Recorded, flag: Option<Runtime>, fallback: Runtime) -> Runtime {
    flag.or(rec.record.runtime.container_runtime)
        .unwrap_or(fallback)
}

/// The environment a replay runs in: the engine the record names (the
/// first environment or the reserve that ran the code), no reserve — a
/// replay reproduces one run where it ran, or stops naming that engine.
/// A record without one runs at `DOCKER_HOST` (or the local socket).
pub(crate) fn environments_for(rec: &Recorded) -> Environments {
    let engine = rec
        .record
        .runtime
        .environment
        .as_ref()
        .map(|e| e.engine.clone());
    Environments::new(engine, None)
}

/// The note when a replay does not run under the recorded runtime.
fn runtime_note(recorded: Option<Runtime>, used: Runtime) -> Option<String> {
    match recorded {
        Some(r) if r == used => None,
        Some(r) => Some(format!(
            "runtime: the run used {}, this replay ran under {}; a difference may come from the runtime",
            r.as_str(),
            used.as_str()
        )),
        None => Some(format!(
            "runtime: the record does not say which runtime the run used (it predates that field); this replay ran under {}",
            used.as_str()
        )),
    }
}

/// Checks the preconditions, re-runs the recorded code under `runtime`
/// (see [`runtime_for`]) and compares. `changed` are the inputs among
/// `inputs` whose sha256 differs from the record's (allowed by the caller,
/// `--changed-inputs`): the verdict names each, first among its notes.
pub(crate) async fn replay(
    sandbox: &dyn Executor,
    rec: &Recorded,
    inputs: Vec<InputFile>,
    changed: &[ChangedInput],
    image: Option<&str>,
    runtime: Runtime,
) -> Result<ReplayVerdict, ReplayError> {
    let record = &rec.record;
    let mut problems: Vec<String> = code_mismatch(rec).into_iter().collect();
    for (i, (code, step)) in rec.steps.iter().zip(&record.steps).enumerate() {
        if code.is_none() {
            problems.push(format!(
                "step {}: no code with the recorded sha256 {} is in {}, so the session cannot be re-run",
                i + 1,
                step.code_sha256,
                rec.source
            ));
        }
    }
    let image = match check_image(sandbox, record, image).await {
        Ok(i) => Some(i),
        Err(e) => {
            problems.push(e);
            None
        }
    };
    let Some(image) = image.filter(|_| problems.is_empty()) else {
        return Err(ReplayError::Mismatch(problems));
    };
    let mut notes: Vec<String> = changed.iter().map(ChangedInput::note).collect();
    let mut extra_env = BTreeMap::new();
    for (k, v) in &record.env {
        match BASE_ENV.iter().find(|(b, _)| b == k) {
            Some((_, base)) if base == v => {}
            Some((_, base)) => notes.push(format!(
                "environment: the run had {k}={v}, this compute-bot sets {k}={base}"
            )),
            None => {
                extra_env.insert(k.clone(), v.clone());
            }
        }
    }
    if record.bot_version != env!("CARGO_PKG_VERSION") {
        notes.push(format!(
            "compute-bot {} recorded the run; this is {}",
            record.bot_version,
            env!("CARGO_PKG_VERSION")
        ));
    }
    notes.extend(runtime_note(record.runtime.container_runtime, runtime));
    let cfg = SandboxConfig {
        image,
        limits: record.limits.clone(),
        env: extra_env,
        runtime,
        // The modules a run preloads by default (the record does not say
        // which were preloaded; preloading changes nothing the code may do,
        // only how long its imports take — matplotlib alone takes seconds).
        preload: DEFAULT_PRELOAD.iter().map(|m| m.to_string()).collect(),
        ..Default::default()
    };
    let job = Job {
        code: rec.code.clone(),
        inputs,
        rules: record.rules.clone(),
    };
    let t = Instant::now();
    let (outcome, mut steps) = if rec.steps.is_empty() {
        (sandbox.run(&cfg, &job).await?, Vec::new())
    } else {
        let codes: Vec<&str> = rec.steps.iter().flatten().map(String::as_str).collect();
        let mut steps = run_steps(sandbox, &cfg, &job, &codes).await?;
        let last = steps.pop().expect("step 1 ran");
        (last, steps)
    };
    let total_ms = t.elapsed().as_millis() as u64;
    if let Some(engine) = &record.runtime.engine
        && let Some(now) = crate::record::engine_version(sandbox).await
        && &now != engine
    {
        notes.push(format!(
            "engine: the run used Docker {engine}, this is {now}"
        ));
    }
    let mut verdict = judge(rec, outcome, runtime, notes, total_ms);
    verdict.changed_inputs = changed.to_vec();
    steps.push(verdict.outcome.clone());
    if let Some(first) = first_differing_step(record, &steps) {
        verdict.reproduced = false;
        verdict.verdict = "differs";
        verdict.differences.insert(0, first.1);
        verdict.first_differing_step = Some(first.0);
    }
    Ok(verdict)
}

/// Runs `codes` in order as the steps of one fresh session (each with the
/// recorded deadline; the last one collects `/out`); every step's outcome.
/// A step that raises does not stop it (a session's repaired step is
/// replayed as it ran); one that ends the session does.
async fn run_steps(
    sandbox: &dyn Executor,
    cfg: &SandboxConfig,
    job: &Job,
    codes: &[&str],
) -> Result<Vec<Outcome>, SandboxError> {
    let options = |i: usize| crate::sandbox::StepOptions {
        last: i + 1 == codes.len(),
        timeout: cfg.limits.timeout,
        then: crate::sandbox::Then::Next,
    };
    let first = Job {
        code: codes[0].to_string(),
        ..job.clone()
    };
    let prepared = sandbox.prepare(cfg.clone()).await?;
    let (outcome, mut steps) = prepared.begin(&first, options(0)).await?;
    let mut outcomes = vec![outcome];
    for (i, code) in codes.iter().enumerate().skip(1) {
        if steps.is_over() {
            break;
        }
        match steps.step(code, options(i)).await {
            Ok(o) => outcomes.push(o),
            Err(e) => {
                steps.end(None).await;
                return Err(e);
            }
        }
    }
    steps.end(outcomes.last_mut()).await;
    Ok(outcomes)
}

/// The first step whose output differs from the record's (its stdout hash,
/// or it did not run), and the line that says so.
fn first_differing_step(record: &RunRecord, outcomes: &[Outcome]) -> Option<(u32, String)> {
    record.steps.iter().enumerate().find_map(|(i, step)| {
        let n = i as u32 + 1;
        let Some(o) = outcomes.get(i) else {
            return Some((n, format!("step {n} is the first whose output differs: it did not run (the session ended before it)")));
        };
        let now = sha256_hex(o.stdout.as_bytes());
        (now != step.stdout_sha256).then(|| {
            (n, format!(
                "step {n} is the first whose output differs: stdout sha256 recorded {}, replay {now}",
                step.stdout_sha256
            ))
        })
    })
}

fn judge(
    rec: &Recorded,
    outcome: Outcome,
    runtime: Runtime,
    notes: Vec<String>,
    total_ms: u64,
) -> ReplayVerdict {
    let record = &rec.record;
    let stdout_sha256 = sha256_hex(outcome.stdout.as_bytes());
    let result = read_result(&outcome);
    let result_sha = result.as_ref().map(result_sha256);
    let mut diffs = Vec::new();
    if outcome.status.as_str() != record.runtime.status {
        diffs.push(format!(
            "status: the run ended `{}`, the replay `{}`",
            record.runtime.status,
            outcome.status.as_str()
        ));
    }
    if result_sha != record.result_sha256 {
        diffs.push(format!(
            "result sha256: recorded {}, replay {}",
            record.result_sha256.as_deref().unwrap_or("(no result)"),
            result_sha.as_deref().unwrap_or("(no result)")
        ));
        match (&rec.result, &result) {
            (Some(a), Some(b)) => diffs.extend(differences(a, b, 0.0)),
            (None, Some(b)) => diffs.push(format!(
                "the replay's result: {}",
                crate::render::cut_chars(&serde_json::to_string(b).unwrap_or_default(), 2000)
            )),
            _ => {}
        }
    }
    if stdout_sha256 != record.stdout_sha256 {
        diffs.push(format!(
            "stdout sha256: recorded {}, replay {}",
            record.stdout_sha256, stdout_sha256
        ));
    }
    // Records from before files were recorded compare no files.
    if let Some(files) = &record.files {
        diffs.extend(crate::record::file_differences(files, &outcome.artifacts));
    }
    let reproduced = diffs.is_empty();
    ReplayVerdict {
        reproduced,
        verdict: if reproduced { "reproduced" } else { "differs" },
        source: rec.source.clone(),
        differences: diffs,
        first_differing_step: None,
        notes,
        changed_inputs: Vec::new(),
        recorded_stdout_sha256: record.stdout_sha256.clone(),
        stdout_sha256,
        recorded_result_sha256: record.result_sha256.clone(),
        result_sha256: result_sha,
        result,
        recorded_duration_ms: record.runtime.duration_ms,
        duration_ms: outcome.duration_ms,
        total_ms,
        runtime,
        outcome,
    }
}

impl ReplayVerdict {
    /// The exit status: 0 reproduced, 1 differs.
    pub(crate) fn exit_code(&self) -> i32 {
        if self.reproduced {
            EXIT_REPRODUCED
        } else {
            EXIT_DIFFERS
        }
    }

    /// A short human-readable verdict (Markdown-safe plain text).
    pub(crate) fn text(&self) -> String {
        let mut s = if self.reproduced {
            format!(
                "reproduced: same result and stdout (result sha256 {}, stdout sha256 {}); the code ran {} ms (recorded {} ms)\n",
                self.result_sha256.as_deref().unwrap_or("(no result)"),
                self.stdout_sha256,
                self.duration_ms,
                self.recorded_duration_ms
            )
        } else {
            format!("differs:\n{}\n", self.differences.join("\n"))
        };
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_under_another_runtime_says_so() {
        use Runtime::{Runc, Runsc};
        assert_eq!(runtime_note(Some(Runsc), Runsc), None);
        let n = runtime_note(Some(Runsc), Runc).unwrap();
        assert!(
            n.contains("the run used runsc, this replay ran under runc"),
            "{n}"
        );
        let n = runtime_note(None, Runc).unwrap();
        assert!(n.contains("does not say which runtime"), "{n}");
    }

    #[test]
    fn a_sessions_clean_steps_are_one_code_in_cells() {
        let look = "import pandas as pd\ndf = pd.read_csv('/data/a.csv')\n";
        let broken = "print(df.amout)\n";
        let last = "import json\nprint(json.dumps({'n': len(df)}))\n";
        let step = |code: &str, error: bool| crate::record::RecordedStep {
            code_sha256: sha256_hex(code.as_bytes()),
            stdout_sha256: sha256_hex(b""),
            error,
        };
        let mut record = crate::record::tests::sample();
        record.steps = vec![step(look, false), step(broken, true), step(last, false)];
        let mut rec = Recorded {
            record,
            code: last.into(),
            result: None,
            source: "the comment".into(),
            steps: vec![Some(look.into()), Some(broken.into()), Some(last.into())],
        };
        let code = rec.session_cells().unwrap().unwrap();
        assert_eq!(code, format!("# %%\n{look}\n# %%\n{last}"));
        let cells = crate::notebook::cells::percent_cells(&code);
        assert_eq!(cells.len(), 2);
        assert_eq!(
            (cells[0].code.as_str(), cells[1].code.as_str()),
            (look, last)
        );
        rec.steps[0] = None;
        assert!(
            rec.session_cells()
                .unwrap_err()
                .contains("step 1 is not in the comment")
        );
        rec.record.steps.clear();
        assert_eq!(rec.session_cells(), Ok(None));
    }

    #[test]
    fn a_changed_input_stops_a_replay_unless_it_may_run_on_the_current_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let then = b"day,amount\nmon,3\n";
        let now = b"day,amount\nmon,4\n";
        std::fs::write(dir.path().join("data/sales.csv"), now).unwrap();
        let mut record = crate::record::tests::sample();
        record.inputs[0].name = "sales.csv".into();
        record.inputs[0].path = Some("data/sales.csv".into());
        record.inputs[0].size = then.len() as u64 + 1;
        record.inputs[0].sha256 = sha256_hex(then);
        let (was, is) = (sha256_hex(then), sha256_hex(now));

        let problems = resolve_inputs(&record, &[], dir.path(), ChangedInputs::Refuse).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        let p = &problems[0];
        for part in [
            "input `sales.csv` (`",
            &format!("its sha256 is {is} (17 bytes), the record says {was} (18 bytes)"),
            "restore the recorded version",
            "pass --changed-inputs to replay on the current file",
        ] {
            assert!(p.contains(part), "{part}: {p}");
        }

        let (files, changed) =
            resolve_inputs(&record, &[], dir.path(), ChangedInputs::Run).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].sha256(), is);
        assert_eq!(changed.len(), 1);
        let c = &changed[0];
        assert_eq!(
            (
                c.name.as_str(),
                c.recorded_sha256.as_str(),
                c.sha256.as_str()
            ),
            ("sales.csv", was.as_str(), is.as_str())
        );
        assert_eq!((c.recorded_size, c.size), (18, 17));
        let note = c.note();
        assert!(
            note.contains(&format!(
                "sha256 {was} (18 bytes) recorded → {is} (17 bytes) now"
            )),
            "{note}"
        );
        // `/compute replay` has no such flag: its problem does not name it.
        let found = vec![("data/sales.csv".to_string(), files[0].clone())];
        let p = compare_inputs(&record, found).unwrap_err();
        assert!(p[0].contains("restore the recorded version"), "{p:?}");
        assert!(!p[0].contains("--changed-inputs"), "{p:?}");

        // An unchanged input is none; a missing one stays a problem.
        record.inputs[0].size = now.len() as u64;
        record.inputs[0].sha256 = is.clone();
        let (_, changed) = resolve_inputs(&record, &[], dir.path(), ChangedInputs::Run).unwrap();
        assert!(changed.is_empty(), "{changed:?}");
        std::fs::remove_file(dir.path().join("data/sales.csv")).unwrap();
        let problems = resolve_inputs(&record, &[], dir.path(), ChangedInputs::Run).unwrap_err();
        assert!(problems[0].contains("is missing"), "{problems:?}");
    }

    #[test]
    fn python_blocks_respects_longer_fences() {
        let body = "x\n````python\na = '```'\n```\nb\n````\n```text\nno\n```\n```python\nc\n```\n";
        assert_eq!(
            python_blocks(body),
            vec!["a = '```'\n```\nb\n".to_string(), "c\n".to_string()]
        );
    }
}
