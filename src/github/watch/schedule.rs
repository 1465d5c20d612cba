//! The schedule and dispatch runner: every watch (or those the `watch`
//! input names) through the loop, its sticky comment kept, the job failed
//! when a check fails or a watch gives no result.

use std::io::Write;

use serde_json::Value;

use crate::github::actions::workflow::{self};
use crate::github::texts;
use crate::github::thread::{Ctx, Thread, conclude, end_quietly, log_annotation};
use crate::status::{Exit, Status};
use crate::watch_spec::{Watch, WatchError, load_dir};

use super::runner::{annotate_failures, config_error, folder, run_one, watches_end};
use super::state::keep_sticky;

/// Ends a run whose watch files cannot be read: each problem as an
/// `::error file=...` annotation, exit 2.
fn watch_errors(ctx: &Ctx<'_>, errors: &[WatchError]) -> Exit {
    let mut out = std::io::stdout().lock();
    for e in errors {
        let _ = writeln!(
            out,
            "{}",
            workflow::file_error_annotation(e, "compute-bot watch file")
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
