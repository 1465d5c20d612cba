//! Watches in the Action: `schedule` / `workflow_dispatch` runs without a
//! goal or code run the repository's watches (`.github/compute/*.yml`, the
//! `watches` input) and keep one sticky comment per watch; `pull_request`
//! runs compare the watches whose inputs the pull request changes.
//!
//! - **Every run** goes through the normal loop ([`Agent::answer`]) with the
//!   policy in force, the watch's checks as `output.checks` (a failed check
//!   stops, never escalates) and its schema; its inputs go through the one
//!   admission ([`crate::github::inputs::resolve`]); the report (with its run
//!   record) is written under `compute-bot-reports/` for `replay`.
//! - **Schedule and dispatch**: the sticky comment of a watch is the bot's
//!   own comment with [`texts::watch_marker`] in the watch's `issue`, edited
//!   in place; its hidden state marker keeps the history. A new comment (the
//!   notification) only when a value moved beyond the watch's `tolerance`, a
//!   check started or stopped failing, or the result went or came back.
//! - **Pull requests**: the watch files are read at the **base** sha (never
//!   the pull request's edit of them), the inputs at the base and the head
//!   sha through the contents API into a temporary workspace; one comment
//!   ([`texts::WATCH_PR_MARKER`]) is created or edited. A fork's pull request
//!   (read-only token) gets the job summary and the exit status only.
//! - A failed check or a run without a result fails the job (exit 1) with
//!   an `::error title=...::` annotation naming the watch and the check.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::{Agent, Request};
use crate::github::actions_io::{self, Outputs};
use crate::github::client::GitHubError;
use crate::github::inputs;
use crate::github::repo::ReadError;
use crate::github::request::{Job, keep_sources, model_for, write_report_as};
use crate::github::sources;
use crate::github::texts::{self, CheckView, stop};
use crate::github::thread::{
    Ctx, Post, Published, Stop, Thread, conclude, end_quietly, log_annotation,
};
use crate::policy::OnCheckFailure;
use crate::record::CheckOutcome;
use crate::report::{Report, ReportStatus};
use crate::status::{Exit, Status};
use crate::watch::{DEFAULT_DIR, Watch, WatchError, changes, leaves, load_dir};

/// Most history entries kept in a sticky comment.
const HISTORY_MAX: usize = 20;
/// Largest history (JSON bytes; hex doubles it in the comment).
const STATE_MAX_BYTES: usize = 16 * 1024;
/// Largest watch file read at a ref.
const WATCH_FILE_MAX: u64 = 256 * 1024;

/// What one run of a watch gave.
struct WatchRun {
    /// The values (empty without a result).
    values: BTreeMap<String, Value>,
    /// The result, when there is one.
    result: Option<Value>,
    /// The checks.
    checks: Vec<CheckOutcome>,
    /// Why there is no result.
    error: Option<String>,
    /// The code that ran.
    code_sha256: Option<String>,
    /// The report file.
    report_path: Option<String>,
}

impl WatchRun {
    fn failed(error: String) -> WatchRun {
        WatchRun {
            values: BTreeMap::new(),
            result: None,
            checks: Vec::new(),
            error: Some(error),
            code_sha256: None,
            report_path: None,
        }
    }

    fn views(&self) -> Vec<CheckView<'_>> {
        self.checks
            .iter()
            .map(|c| CheckView {
                check: &c.check,
                passed: c.passed,
                error: c.error.as_deref(),
            })
            .collect()
    }

    fn failing(&self) -> Vec<&CheckOutcome> {
        self.checks.iter().filter(|c| !c.passed).collect()
    }

    /// True when the job must fail for this run.
    fn fails(&self) -> bool {
        self.error.is_some() || !self.failing().is_empty()
    }
}

/// One entry of a watch's history (in the sticky comment's state marker).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Entry {
    /// When (UTC, `YYYY-MM-DD HH:MM`).
    at: String,
    #[serde(default)]
    values: BTreeMap<String, Value>,
    /// The checks that failed, with why.
    #[serde(default)]
    failing: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    code_sha256: Option<String>,
    /// The workflow run (`GITHUB_RUN_ID`) that wrote it: a re-run of that
    /// run replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
    /// Its attempt (`GITHUB_RUN_ATTEMPT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
}

/// The hidden state of a sticky comment.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    #[serde(default)]
    history: Vec<Entry>,
}

impl Entry {
    fn of(run: &WatchRun, at: &str, run_id: &str, attempt: u32) -> Entry {
        Entry {
            at: at.to_string(),
            run_id: Some(run_id.to_string()),
            attempt: Some(attempt),
            values: run.values.clone(),
            failing: run
                .failing()
                .into_iter()
                .map(|c| (c.check.clone(), c.error.clone().unwrap_or_default()))
                .collect(),
            error: run.error.clone(),
            code_sha256: run.code_sha256.clone(),
        }
    }
}

impl State {
    /// Adds `entry` as the newest row; a re-run of a workflow run (same
    /// `run_id`, a later attempt) replaces that run's row instead of adding
    /// a second one.
    fn record(&mut self, entry: Entry) {
        if let Some(id) = &entry.run_id {
            self.history.retain(|e| e.run_id.as_ref() != Some(id));
        }
        self.history.push(entry);
    }
}

/// What moved from `prev` to `now` under `tolerance`.
fn moved<'a>(prev: &'a Entry, now: &'a Entry, tolerance: f64) -> texts::Moved<'a> {
    let mut m = texts::Moved {
        values: Vec::new(),
        started_failing: Vec::new(),
        stopped_failing: Vec::new(),
        result: None,
    };
    match (&prev.error, &now.error) {
        (None, Some(e)) => m.result = Some(Err(e.as_str())),
        (Some(_), None) => m.result = Some(Ok(())),
        (Some(_), Some(_)) => return m,
        (None, None) => {}
    }
    if now.error.is_none() && prev.error.is_none() {
        for c in changes(&prev.values, &now.values, tolerance) {
            let key = now
                .values
                .get_key_value(&c.path)
                .or_else(|| prev.values.get_key_value(&c.path))
                .map(|(k, _)| k.as_str())
                .unwrap_or_default();
            m.values
                .push((key, prev.values.get(key), now.values.get(key)));
        }
        for (c, why) in &now.failing {
            if !prev.failing.contains_key(c) {
                m.started_failing.push((c.as_str(), why.as_str()));
            }
        }
        for c in prev.failing.keys() {
            if !now.failing.contains_key(c) {
                m.stopped_failing.push(c.as_str());
            }
        }
    }
    m
}

/// `::error title=compute-bot watch <name>::...` for each failed check, or
/// for a run without a result.
fn annotate_failures(w: &Watch, run: &WatchRun, side: &str) {
    let title = actions_io::escape_property(&format!("compute-bot watch {}", w.name));
    let mut out = std::io::stdout().lock();
    if let Some(e) = &run.error {
        let _ = writeln!(
            out,
            "::error title={title}::{}",
            actions_io::escape_data(&format!("watch `{}`{side} gave no result: {e}", w.name))
        );
    }
    for c in run.failing() {
        let _ = writeln!(
            out,
            "::error title={title}::{}",
            actions_io::escape_data(&format!(
                "watch `{}`{side}: check `{}` failed: {}",
                w.name,
                c.check,
                c.error.as_deref().unwrap_or("failed")
            ))
        );
    }
    let _ = out.flush();
}

/// The watch's inputs: its workspace files and its `github:` sources
/// (fetched once per run, [`crate::github::sources::Cache`]), or why not.
async fn watch_inputs(
    ctx: &Ctx<'_>,
    w: &Watch,
    workspace: &Path,
) -> Result<(Vec<inputs::Resolved>, sources::Fetched), String> {
    let (paths, specs) = sources::split_inputs(&w.inputs);
    let problem = |problems: Vec<inputs::InputProblem>| stop::inputs_unusable_line(&problems);
    let mut resolved =
        inputs::resolve(workspace, &paths, "", &ctx.policy.inputs).map_err(problem)?;
    let (data, fetched) = ctx
        .fetched
        .resolve(ctx.gh, &specs, &ctx.policy.inputs)
        .await
        .map_err(|p| stop::github_data_unusable_line(&p))?;
    resolved.extend(data);
    inputs::together(&resolved, &ctx.policy.inputs).map_err(problem)?;
    Ok((resolved, fetched))
}

/// Runs one watch on the files of `workspace` through the loop; `stem` names
/// its report file.
async fn run_one(ctx: &Ctx<'_>, w: &Watch, workspace: &Path, stem: &str) -> WatchRun {
    let (resolved, fetched) = match watch_inputs(ctx, w, workspace).await {
        Ok(r) => r,
        Err(problems) => return WatchRun::failed(problems),
    };
    let job = Job {
        goal: w.goal.clone(),
        code: w.code.clone(),
        ..Job::default()
    };
    let (model, _, _) = match model_for(ctx, &job) {
        Ok(m) => m,
        Err(stop) => return WatchRun::failed(stop.text()),
    };
    let sandbox = match ctx
        .session
        .sandbox(&ctx.policy.sandbox.environments())
        .await
    {
        Ok(s) => s,
        Err(e) => return WatchRun::failed(format!("the sandbox is not available: {e}")),
    };
    let mut policy = ctx.policy.clone();
    policy.output.checks = w.checks.clone();
    policy.output.on_check_failure = OnCheckFailure::Stop;
    policy.explain.enabled = false;
    let agent = Agent {
        policy: &policy,
        sandbox,
        model: model.as_ref(),
        runtime: ctx.runtime,
        progress: &|_| {},
    };
    let request = Request {
        goal: w.goal.clone(),
        code: w.code.clone(),
        inputs: resolved.iter().map(|r| r.file.clone()).collect(),
        schema: w.schema.clone(),
        context: crate::github::request::with_sources(None, &fetched),
        // Checked before anything runs: other code never reaches a container.
        pinned_sha256: w.code_sha256.clone(),
        ..Request::default()
    };
    let mut report: Report = match agent.answer(request).await {
        Ok(r) => r,
        Err(crate::agent::AgentError::ModelConfiguration { report, .. }) => *report,
        Err(e) => return WatchRun::failed(e.to_string()),
    };
    let paths: Vec<(String, String)> = resolved
        .iter()
        .map(|r| (r.file.name.clone(), r.path.clone()))
        .collect();
    report.set_input_paths(&paths);
    // The GitHub data are kept and their snapshot recorded as for a
    // comment's run (once per run when several watches share them).
    keep_sources(ctx, &fetched, &mut report).await;
    let report_path = write_report_as(ctx.env, &report, stem);
    let checks = report
        .record
        .as_ref()
        .map(|r| r.checks.clone())
        .unwrap_or_default();
    let checks_failed = checks.iter().any(|c| !c.passed);
    // A failed check stops the loop without a result; the validated value
    // is the last attempt's.
    let result = match report.status {
        ReportStatus::Ok => report.result.clone(),
        ReportStatus::Failed if checks_failed => report
            .attempts
            .last()
            .filter(|a| a.validation_errors.is_empty())
            .and_then(|a| a.result.clone()),
        _ => None,
    };
    // The agent stopped unpinned code before it ran (see `pinned_sha256`).
    let mut error = match &result {
        Some(_) => None,
        None => Some(
            report
                .stop_reason
                .clone()
                .unwrap_or_else(|| texts::watch_run_ended(report.status.label())),
        ),
    };
    if let (Some(pin), Some(sha)) = (&w.code_sha256, &report.code_sha256)
        && pin != sha
    {
        error = Some(texts::watch_not_pinned(sha, pin, &w.file));
    }
    WatchRun {
        values: if error.is_none() {
            result.as_ref().map(leaves).unwrap_or_default()
        } else {
            BTreeMap::new()
        },
        result: if error.is_none() { result } else { None },
        checks: if error.is_none() { checks } else { Vec::new() },
        error,
        code_sha256: report.code_sha256.clone(),
        report_path,
    }
}

/// The watch folder (the `watches` input, else [`DEFAULT_DIR`]).
fn folder(ctx: &Ctx<'_>) -> String {
    ctx.env
        .inputs
        .watches
        .as_deref()
        .map(|f| f.trim().trim_matches('/').to_string())
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| DEFAULT_DIR.to_string())
}

/// Ends a run whose watch files cannot be read: each problem as an
/// `::error file=...` annotation, exit 2.
fn watch_errors(ctx: &Ctx<'_>, errors: &[WatchError]) -> Exit {
    let mut out = std::io::stdout().lock();
    for e in errors {
        let _ = writeln!(
            out,
            "{}",
            actions_io::file_error_annotation(e, "compute-bot watch file")
        );
    }
    let _ = out.flush();
    let lines: Vec<String> = errors.iter().map(|e| format!("- `{e}`")).collect();
    end_quietly(
        ctx.env,
        Status::Error,
        Some(&texts::watch_files_unusable(&lines)),
    )
}

fn config_error(ctx: &Ctx<'_>, message: &str) -> Exit {
    log_annotation("error", &format!("compute-bot: {message}"));
    end_quietly(
        ctx.env,
        Status::Error,
        Some(&texts::could_not_start(message)),
    )
}

/// The link to comment `id` on `issue`.
fn comment_url(ctx: &Ctx<'_>, issue: u64, id: u64) -> String {
    format!(
        "{}/{}/issues/{issue}#issuecomment-{id}",
        ctx.env.server_url, ctx.env.repository
    )
}

/// Runs the watches (all, or those `names` names) of a schedule or dispatch
/// run; see the module docs.
pub(crate) async fn run_watches(ctx: &Ctx<'_>, names: &[String]) -> Exit {
    let folder = folder(ctx);
    let all = match load_dir(&ctx.env.workspace.join(&folder), &folder) {
        Ok(w) => w,
        Err(errors) => return watch_errors(ctx, &errors),
    };
    if all.is_empty() {
        return config_error(ctx, &texts::nothing_to_watch(&folder));
    }
    let unknown: Vec<&String> = names
        .iter()
        .filter(|n| !all.iter().any(|w| &w.name == *n))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = all.iter().map(|w| w.name.as_str()).collect();
        return config_error(ctx, &texts::unknown_watches(&unknown, &folder, &known));
    }
    let selected: Vec<&Watch> = all
        .iter()
        .filter(|w| names.is_empty() || names.contains(&w.name))
        .collect();
    let at = chrono::Utc::now().format("%Y-%m-%d %H:%M").to_string();
    let mut summary = String::new();
    let mut failed = false;
    let mut unposted = false;
    let mut results = serde_json::Map::new();
    let mut report_path = None;
    for w in selected {
        let run = run_one(ctx, w, &ctx.env.workspace, &format!("watch-{}", w.name)).await;
        if run.fails() {
            failed = true;
            annotate_failures(w, &run, "");
        }
        let issue = w.issue.or(ctx.env.inputs.issue);
        let sticky_url = match issue {
            Some(issue) => match keep_sticky(ctx, w, &run, issue, &at).await {
                Ok(url) => Some(url),
                Err(e) => {
                    unposted = true;
                    log_annotation("error", &format!("compute-bot: watch `{}`: {e}", w.name));
                    None
                }
            },
            None => None,
        };
        summary.push_str(&texts::watch_summary(
            &w.name,
            &run.values,
            &run.views(),
            run.error.as_deref(),
            sticky_url.as_deref(),
        ));
        results.insert(w.name.clone(), run.result.clone().unwrap_or(Value::Null));
        report_path = report_path.or(run.report_path.clone());
    }
    let end = watches_end(failed, summary, results, report_path);
    let exit = conclude(ctx, Thread::new(ctx.gh, None, None), Ok(end)).await;
    exit.unposted(unposted)
}

/// The end of a watches run: `failed` when a check failed or a watch gave
/// no result; each watch's result by name as the `result` output; nothing
/// posted by [`conclude`] (the watches post their own comments).
fn watches_end(
    failed: bool,
    summary: String,
    results: serde_json::Map<String, Value>,
    report_path: Option<String>,
) -> Published {
    Published {
        status: if failed { Status::Failed } else { Status::Ok },
        post: Post::Nothing,
        reaction: None,
        summary,
        outputs: Outputs {
            result: Some(Value::Object(results)),
            report_path,
            ..Outputs::default()
        },
    }
}

/// A line chart of the history (through the result charts of
/// [`crate::render`], which pick the value to draw: one that names a
/// measure, e.g. `/total`, else the last); over the runs that have every
/// numeric value of the newest run (at most 11); none with fewer than two.
fn history_chart(history: &[Entry]) -> Option<String> {
    let newest = history.last()?;
    let keys: Vec<&String> = newest
        .values
        .iter()
        .filter(|(_, v)| v.is_number())
        .map(|(k, _)| k)
        .take(11)
        .collect();
    if keys.is_empty() {
        return None;
    }
    let points: Vec<Value> = history
        .iter()
        .filter(|e| {
            keys.iter()
                .all(|k| e.values.get(*k).is_some_and(Value::is_number))
        })
        .map(|e| {
            let mut m = serde_json::Map::new();
            m.insert("date".into(), Value::String(e.at.clone()));
            for k in &keys {
                m.insert((*k).clone(), e.values[*k].clone());
            }
            Value::Object(m)
        })
        .collect();
    if points.len() < 2 {
        return None;
    }
    crate::render::chart_for(&Value::Array(points), None)
}

/// Keeps the last [`HISTORY_MAX`] entries, and fewer while the JSON is over
/// [`STATE_MAX_BYTES`] (so the comment stays far below GitHub's 65,536
/// characters); returns the JSON.
fn bounded(state: &mut State) -> Vec<u8> {
    let drop = state.history.len().saturating_sub(HISTORY_MAX);
    state.history.drain(..drop);
    let mut json = serde_json::to_vec(&state).unwrap_or_default();
    while json.len() > STATE_MAX_BYTES && state.history.len() > 1 {
        state.history.remove(0);
        json = serde_json::to_vec(&state).unwrap_or_default();
    }
    json
}

/// Edits (or creates) the sticky comment of `w` on `issue` with this run
/// added to its history, and posts the notification when something moved;
/// returns the sticky comment's link.
async fn keep_sticky(
    ctx: &Ctx<'_>,
    w: &Watch,
    run: &WatchRun,
    issue: u64,
    at: &str,
) -> Result<String, GitHubError> {
    let marker = texts::watch_marker(&w.name);
    // Only the bot's own comments count: nobody can plant the marker.
    let found = ctx.gh.find_tracking_comment(issue, &marker).await?;
    let mut state: State = found
        .as_ref()
        .and_then(|(_, body)| texts::read_watch_state(body))
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let now = Entry::of(run, at, &ctx.env.run_id, ctx.env.run_attempt);
    // Compared with what the comment shows last (a re-run: its own first
    // attempt), so a move is announced once.
    let prev = state.history.last().cloned();
    state.record(now.clone());
    let json = bounded(&mut state);
    let state_marker = texts::watch_state_marker(&json);
    let rows: Vec<texts::HistoryRow<'_>> = state
        .history
        .iter()
        .map(|e| texts::HistoryRow {
            at: &e.at,
            values: &e.values,
            failing: e.failing.len(),
            error: e.error.as_deref(),
        })
        .collect();
    let views = run.views();
    let chart = history_chart(&state.history);
    let body = texts::watch_sticky(&texts::Sticky {
        name: &w.name,
        file: &w.file,
        code_sha256: run.code_sha256.as_deref(),
        values: &run.values,
        checks: &views,
        error: run.error.as_deref(),
        history: &rows,
        tolerance: w.tolerance,
        run_url: &ctx.env.run_url(),
        state: &state_marker,
        chart: chart.as_deref(),
    });
    let id = match found {
        Some((id, _)) => {
            ctx.gh.update_comment(id, &body).await?;
            id
        }
        None => ctx.gh.create_comment(issue, &body).await?,
    };
    let url = comment_url(ctx, issue, id);
    if let Some(prev) = prev {
        let m = moved(&prev, &now, w.tolerance);
        if !m.is_empty() {
            ctx.gh
                .create_comment(issue, &texts::watch_notification(&w.name, &url, &m))
                .await?;
        }
    }
    Ok(url)
}

// ------------------------------------------------------------ /compute watch

/// A YAML block scalar of `code` (`|`, `|-` or `|+` by its trailing line
/// ends, with an indentation indicator when the first line starts with a
/// space).
fn block_scalar(code: &str) -> String {
    let chomp = if !code.ends_with('\n') {
        "-"
    } else if code.ends_with("\n\n") {
        "+"
    } else {
        ""
    };
    let indent = if code.starts_with([' ', '\t']) {
        "2"
    } else {
        ""
    };
    let mut out = format!("|{indent}{chomp}\n");
    for line in code.strip_suffix('\n').unwrap_or(code).split('\n') {
        if line.is_empty() {
            out.push('\n');
        } else {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The watch file for `code` reading `inputs`, posting to `issue`; checked
/// by reading it back (the code falls back to a quoted string when the block
/// scalar does not give it back exactly).
fn watch_yaml(name: &str, code: &str, inputs: &[String], issue: u64) -> Result<String, String> {
    let sha = texts::sha256_hex(code);
    let list: Vec<String> = inputs
        .iter()
        .map(|p| serde_json::to_string(p).unwrap_or_default())
        .collect();
    let text = |code_yaml: &str| {
        format!(
            "name: {name}\ncode: {code_yaml}code_sha256: {sha}\ninputs: [{}]\nchecks: []\ntolerance: 0\nissue: {issue}\n",
            list.join(", ")
        )
    };
    let block = text(&block_scalar(code));
    if Watch::parse(&block, "watch").is_ok_and(|w| w.code.as_deref() == Some(code)) {
        return Ok(block);
    }
    let quoted = text(&format!(
        "{}\n",
        serde_json::to_string(code).unwrap_or_default()
    ));
    Watch::parse(&quoted, "watch")
        .map(|_| quoted)
        .map_err(|e| e.message)
}

/// `/compute watch <name>`: replies with the watch file that keeps running
/// the exact code of the newest result (with a run record) in `issue`.
pub(crate) async fn watch_file_in_thread(
    ctx: &Ctx<'_>,
    issue: u64,
    name: &str,
) -> Result<Published, Stop> {
    use crate::github::client::Reaction;
    let found = ctx
        .gh
        .find_tracking_comment(issue, crate::record::RECORD_MARKER_START)
        .await
        .map_err(|e| Stop::github(stop::THREAD_UNREADABLE, &e))?;
    let unavailable = |why: &str| {
        Ok(Published::reply(
            Status::Ignored,
            &texts::watch_file_unavailable(why, ctx.prefix),
            Reaction::Confused,
        ))
    };
    let Some((id, body)) = found else {
        return unavailable(texts::NO_RESULT_IN_THREAD);
    };
    let source = comment_url(ctx, issue, id);
    let rec = match crate::replay::Recorded::from_comment_body(&body, &source) {
        Ok(r) => r,
        Err(e) => return unavailable(&e),
    };
    let inputs: Vec<String> = rec
        .record
        .inputs
        .iter()
        .map(|i| i.path.clone().unwrap_or_else(|| i.name.clone()))
        .collect();
    match watch_yaml(name, &rec.code, &inputs, issue) {
        Ok(yaml) => Ok(Published::reply(
            Status::Ok,
            &texts::watch_file_reply(name, &source, &yaml),
            Reaction::Rocket,
        )),
        Err(e) => unavailable(&e),
    }
}

// ------------------------------------------------------------ pull requests

/// Reads the watch files at `sha` (the base): every watch that parses; a
/// broken one is a warning (the base's own problem, not the pull request's).
async fn watches_at(ctx: &Ctx<'_>, sha: &str, folder: &str) -> Result<Vec<Watch>, ReadError> {
    let mut out: Vec<Watch> = Vec::new();
    for path in ctx.gh.files_in(sha, folder).await? {
        let name = path.rsplit('/').next().unwrap_or(&path);
        if !(name.ends_with(".yml") || name.ends_with(".yaml")) {
            continue;
        }
        let Some(bytes) = ctx.gh.file_at(sha, &path, WATCH_FILE_MAX).await? else {
            continue;
        };
        let parsed = String::from_utf8(bytes)
            .map_err(|_| "the file is not UTF-8".to_string())
            .and_then(|src| Watch::parse(&src, &path).map_err(|e| e.to_string()));
        match parsed {
            Ok(w) if out.iter().any(|o| o.name == w.name) => log_annotation(
                "warning",
                &format!(
                    "compute-bot: {path}: the watch name `{}` is taken; skipped",
                    w.name
                ),
            ),
            Ok(w) => out.push(w),
            Err(e) => log_annotation(
                "warning",
                &format!("compute-bot: the base's watch file is not usable, skipped: {e}"),
            ),
        }
    }
    Ok(out)
}

/// Writes the inputs of `w` at `sha` into `dir` (missing files stay
/// missing: the admission then names them).
async fn inputs_at(ctx: &Ctx<'_>, w: &Watch, sha: &str, dir: &Path) -> Result<(), String> {
    let max = ctx.policy.inputs.max_file_bytes.bytes();
    for p in w.inputs.iter().filter(|p| !p.starts_with("github:")) {
        match ctx.gh.file_at(sha, p, max).await {
            Ok(Some(bytes)) => {
                let path = dir.join(p);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
                }
                std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
            }
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// Runs `w` on its inputs at `sha`.
async fn run_at(ctx: &Ctx<'_>, w: &Watch, sha: &str, stem: &str) -> WatchRun {
    let dir = match tempfile_dir() {
        Ok(d) => d,
        Err(e) => return WatchRun::failed(texts::watch_no_workspace(&e.to_string())),
    };
    if let Err(e) = inputs_at(ctx, w, sha, dir.path()).await {
        return WatchRun::failed(texts::watch_inputs_unreadable(sha, &e));
    }
    run_one(ctx, w, dir.path(), stem).await
}

/// A temporary workspace, removed when dropped.
fn tempfile_dir() -> std::io::Result<TempDir> {
    let path = std::env::temp_dir().join(format!(
        "compute-bot-watch-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::create_dir_all(&path)?;
    Ok(TempDir(path))
}

/// A directory removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `pull_request` handler; see the module docs.
pub(crate) async fn on_pull_request(ctx: &Ctx<'_>, number: u64) -> Exit {
    let folder = folder(ctx);
    let pr = match ctx.gh.pull_request(number).await {
        Ok(p) => p,
        Err(e) => return config_error(ctx, &texts::pull_unreadable(number, &e.to_string())),
    };
    let files = match ctx.gh.pull_request_files(number).await {
        Ok(f) => f,
        Err(e) => {
            return config_error(ctx, &texts::pull_files_unreadable(number, &e.to_string()));
        }
    };
    let watches = match watches_at(ctx, &pr.base_sha, &folder).await {
        Ok(w) => w,
        Err(e) => return config_error(ctx, &texts::watch_files_unreadable(&e.to_string())),
    };
    let touched: Vec<(&Watch, Vec<&str>)> = watches
        .iter()
        .map(|w| {
            let changed: Vec<&str> = w
                .inputs
                .iter()
                .filter(|i| files.truncated || files.touches(i))
                .map(String::as_str)
                .collect();
            (w, changed)
        })
        .filter(|(_, changed)| !changed.is_empty())
        .collect();
    if touched.is_empty() {
        log_annotation(
            "notice",
            &texts::ignored(&format!(
                "pull request #{number} changes no input of a watch in {folder} (at the base)"
            )),
        );
        return end_quietly(ctx.env, Status::Ignored, None);
    }
    let mut runs = Vec::new();
    for (w, _) in &touched {
        let base = run_at(ctx, w, &pr.base_sha, &format!("watch-{}-base", w.name)).await;
        let head = run_at(ctx, w, &pr.head_sha, &format!("watch-{}-head", w.name)).await;
        if head.fails() {
            annotate_failures(w, &head, " on the head");
        }
        runs.push((base, head));
    }
    let views: Vec<Vec<CheckView<'_>>> = runs.iter().map(|(_, h)| h.views()).collect();
    let compared: Vec<texts::Compared<'_>> = touched
        .iter()
        .zip(&runs)
        .zip(&views)
        .map(|(((w, changed), (base, head)), checks)| texts::Compared {
            name: &w.name,
            file: &w.file,
            base: &base.values,
            head: &head.values,
            base_error: base.error.as_deref(),
            head_error: head.error.as_deref(),
            checks,
            changed_inputs: changed.clone(),
        })
        .collect();
    let body = texts::watch_pull_request(&pr.base_sha, &pr.head_sha, &compared, &ctx.env.run_url());
    let failed = runs.iter().any(|(_, h)| h.fails());
    let mut summary = body.clone();
    let mut comment_id = None;
    let mut unposted = false;
    if pr.is_fork() {
        tracing::info!("a fork's pull request: the token is read-only; the summary has the answer");
    } else {
        match post_pr_comment(ctx, number, &body).await {
            Ok(id) => comment_id = Some(id),
            // A read-only token (e.g. a fork's): the summary carries the answer.
            Err(e) if e.status() == Some(403) => {
                log_annotation(
                    "warning",
                    &format!(
                        "compute-bot: the token may not comment ({e}); the job summary has the comparison"
                    ),
                );
            }
            Err(e) => {
                unposted = true;
                log_annotation("error", &format!("compute-bot: {e}"));
                summary.insert_str(0, &texts::pull_comment_unposted(&e.to_string()));
            }
        }
    }
    let results: serde_json::Map<String, Value> = touched
        .iter()
        .zip(&runs)
        .map(|((w, _), (_, h))| (w.name.clone(), h.result.clone().unwrap_or(Value::Null)))
        .collect();
    let report_path = runs.iter().find_map(|(_, h)| h.report_path.clone());
    let end = watches_end(failed, summary, results, report_path);
    let mut exit = conclude(ctx, Thread::new(ctx.gh, None, None), Ok(end)).await;
    if let Some(id) = comment_id {
        tracing::info!("the watch comment of #{number} is {id}");
    }
    if unposted {
        exit = exit.unposted(true);
    }
    exit
}

/// Edits the bot's watch comment of the pull request, or creates it.
async fn post_pr_comment(ctx: &Ctx<'_>, number: u64, body: &str) -> Result<u64, GitHubError> {
    ctx.gh
        .upsert_tracking_comment(number, texts::WATCH_PR_MARKER, body)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(values: Value, failing: &[&str], error: Option<&str>) -> Entry {
        Entry {
            at: "2026-01-01 00:00".into(),
            values: leaves(&values),
            failing: failing
                .iter()
                .map(|c| (c.to_string(), "the expression is false".into()))
                .collect(),
            error: error.map(str::to_string),
            code_sha256: None,
            run_id: None,
            attempt: None,
        }
    }

    #[test]
    fn a_re_run_replaces_its_own_row() {
        let row = |t: i64, run: &str, attempt: u32| Entry {
            run_id: Some(run.into()),
            attempt: Some(attempt),
            ..entry(json!({"total": t}), &[], None)
        };
        let mut state = State {
            // An older history without run ids stays as it is.
            history: vec![entry(json!({"total": 1}), &[], None)],
        };
        state.record(row(10, "5", 1));
        state.record(row(20, "6", 1));
        state.record(row(21, "6", 2));
        let totals: Vec<(Value, Option<u32>)> = state
            .history
            .iter()
            .map(|e| (e.values["/total"].clone(), e.attempt))
            .collect();
        assert_eq!(
            totals,
            [(json!(1), None), (json!(10), Some(1)), (json!(21), Some(2))]
        );
        // A re-run of an older run: its row moves to the end, still once.
        state.record(row(11, "5", 2));
        let runs: Vec<Option<&str>> = state.history.iter().map(|e| e.run_id.as_deref()).collect();
        assert_eq!(runs, [None, Some("6"), Some("5")]);
    }

    #[test]
    fn the_history_chart_is_a_line_over_the_dates() {
        let h: Vec<Entry> = [40, 42, 60]
            .iter()
            .enumerate()
            .map(|(i, t)| Entry {
                at: format!("2026-01-0{} 06:00", i + 1),
                ..entry(json!({"name": "x", "rows": 2, "total": t}), &[], None)
            })
            .collect();
        let c = history_chart(&h).unwrap();
        assert!(c.starts_with("```mermaid\nxychart-beta"), "{c}");
        assert!(c.contains("line [40, 42, 60]"), "{c}");
        assert!(c.contains("2026-01-03 06:00"), "{c}");
        assert!(history_chart(&h[..1]).is_none());
    }

    #[test]
    fn the_history_is_bounded_newest_kept() {
        let wide: serde_json::Map<String, Value> = (0..50)
            .map(|i| (format!("k{i:02}"), json!("v".repeat(100))))
            .collect();
        let mut state = State {
            history: (0..30)
                .map(|i| Entry {
                    at: format!("{i}"),
                    ..entry(Value::Object(wide.clone()), &[], None)
                })
                .collect(),
        };
        let json = bounded(&mut state);
        assert!(json.len() <= STATE_MAX_BYTES, "{}", json.len());
        assert!(!state.history.is_empty());
        assert_eq!(state.history.last().unwrap().at, "29");
        let mut small = State {
            history: (0..30)
                .map(|i| Entry {
                    at: format!("{i}"),
                    ..entry(json!({"t": i}), &[], None)
                })
                .collect(),
        };
        bounded(&mut small);
        assert_eq!(small.history.len(), HISTORY_MAX);
        assert_eq!(small.history[0].at, "10");
    }

    #[test]
    fn the_watch_file_gives_the_code_back_exactly() {
        for code in [
            "print(1)\n",
            "print(1)",
            "x = 1\n\n\n",
            "  x = 1\nprint(x)\n",
            "if True:\n\n    print('a: b # c')\n",
            "s = \"\\tx\"\n\tprint(s)\n",
        ] {
            let y = watch_yaml("w", code, &["data/a b.csv".into()], 7).unwrap();
            let w = Watch::parse(&y, "w.yml").unwrap_or_else(|e| panic!("{e}\n{y}"));
            assert_eq!(w.code.as_deref(), Some(code), "{y}");
            assert_eq!(w.inputs, vec!["data/a b.csv"]);
            assert_eq!(w.issue, Some(7));
        }
        assert!(watch_yaml("bad name", "print(1)\n", &[], 7).is_err());
    }

    #[test]
    fn only_moves_beyond_the_tolerance_and_check_flips_count() {
        let a = entry(json!({"total": 100}), &[], None);
        assert!(moved(&a, &entry(json!({"total": 104}), &[], None), 0.05).is_empty());
        let c = entry(json!({"total": 110}), &[], None);
        let m = moved(&a, &c, 0.05);
        assert_eq!(m.values.len(), 1);
        let b = entry(json!({"total": 100}), &["c1"], None);
        let m = moved(&a, &b, 0.05);
        assert_eq!(m.started_failing.len(), 1);
        assert!(moved(&b, &b, 0.0).is_empty());
        assert_eq!(moved(&b, &a, 0.0).stopped_failing, vec!["c1"]);
        let e = entry(json!({}), &[], Some("boom"));
        assert_eq!(moved(&a, &e, 0.0).result, Some(Err("boom")));
        assert!(moved(&e, &e, 0.0).is_empty());
    }
}
