//! One watch through the loop: its inputs (workspace files and `github:`
//! sources), the run with the watch's checks and schema, what it gave
//! ([`WatchRun`]), and the end both runners share.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::agent::Agent;
use crate::github::actions::workflow::{self, Outputs};
use crate::github::activity;
use crate::github::execute::{keep_sources, model_for, with_sources, write_report_as};
use crate::github::inputs;
use crate::github::spec::RunSpec;
use crate::github::texts::{self, CheckView, stop};
use crate::github::thread::{Ctx, Post, Published, end_quietly, log_annotation};
use crate::policy::OnCheckFailure;
use crate::record::CheckOutcome;
use crate::report::{Report, ReportStatus};
use crate::status::{Exit, Status};
use crate::watch_spec::{DEFAULT_DIR, Watch, leaves};

/// What one run of a watch gave.
pub(super) struct WatchRun {
    /// The values (empty without a result).
    pub(super) values: BTreeMap<String, Value>,
    /// The result, when there is one.
    pub(super) result: Option<Value>,
    /// The checks.
    pub(super) checks: Vec<CheckOutcome>,
    /// Why there is no result.
    pub(super) error: Option<String>,
    /// The code that ran.
    pub(super) code_sha256: Option<String>,
    /// The report file.
    pub(super) report_path: Option<String>,
}

impl WatchRun {
    pub(super) fn failed(error: String) -> WatchRun {
        WatchRun {
            values: BTreeMap::new(),
            result: None,
            checks: Vec::new(),
            error: Some(error),
            code_sha256: None,
            report_path: None,
        }
    }

    pub(super) fn views(&self) -> Vec<CheckView<'_>> {
        self.checks
            .iter()
            .map(|c| CheckView {
                check: &c.check,
                passed: c.passed,
                error: c.error.as_deref(),
            })
            .collect()
    }

    pub(super) fn failing(&self) -> Vec<&CheckOutcome> {
        self.checks.iter().filter(|c| !c.passed).collect()
    }

    /// True when the job must fail for this run.
    pub(super) fn fails(&self) -> bool {
        self.error.is_some() || !self.failing().is_empty()
    }
}

/// `::error title=compute-bot watch <name>::...` for each failed check, or
/// for a run without a result.
pub(super) fn annotate_failures(w: &Watch, run: &WatchRun, side: &str) {
    let title = workflow::escape_property(&format!("compute-bot watch {}", w.name));
    let mut out = std::io::stdout().lock();
    if let Some(e) = &run.error {
        let _ = writeln!(
            out,
            "::error title={title}::{}",
            workflow::escape_data(&format!("watch `{}`{side} gave no result: {e}", w.name))
        );
    }
    for c in run.failing() {
        let _ = writeln!(
            out,
            "::error title={title}::{}",
            workflow::escape_data(&format!(
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
/// (fetched once per run, [`crate::github::activity::Cache`]), or why not.
async fn watch_inputs(
    ctx: &Ctx<'_>,
    w: &Watch,
    workspace: &Path,
) -> Result<(Vec<inputs::Resolved>, activity::Fetched), String> {
    let (paths, specs) = activity::split_inputs(&w.inputs);
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
pub(super) async fn run_one(ctx: &Ctx<'_>, w: &Watch, workspace: &Path, stem: &str) -> WatchRun {
    let (resolved, fetched) = match watch_inputs(ctx, w, workspace).await {
        Ok(r) => r,
        Err(problems) => return WatchRun::failed(problems),
    };
    let spec = RunSpec::of_watch(w);
    let (model, _, _) = match model_for(ctx, &spec) {
        Ok(m) => m,
        Err(stop) => return WatchRun::failed(stop.text()),
    };
    let sandbox = match ctx
        .session
        .sandbox(&ctx.policy.sandbox.environments())
        .await
    {
        Ok(s) => s,
        Err(e) => return WatchRun::failed(format!("{}: {e}", stop::SANDBOX_UNAVAILABLE)),
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
    // Checked before anything runs: code other than the pinned never
    // reaches a container (`pinned_sha256`).
    let request = spec.request(
        resolved.iter().map(|r| r.file.clone()).collect(),
        with_sources(spec.context.clone(), &fetched),
    );
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
pub(super) fn folder(ctx: &Ctx<'_>) -> String {
    ctx.env
        .inputs
        .watches
        .as_deref()
        .map(|f| f.trim().trim_matches('/').to_string())
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| DEFAULT_DIR.to_string())
}

pub(super) fn config_error(ctx: &Ctx<'_>, message: &str) -> Exit {
    log_annotation("error", &format!("compute-bot: {message}"));
    end_quietly(
        ctx.env,
        Status::Error,
        Some(&texts::could_not_start(message)),
    )
}

/// The end of a watches run: `failed` when a check failed or a watch gave
/// no result; each watch's result by name as the `result` output; nothing
/// posted by [`conclude`](crate::github::thread::conclude) (the watches post their own comments).
pub(super) fn watches_end(
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
