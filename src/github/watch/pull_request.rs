//! The pull-request runner: the watches whose inputs a pull request
//! changes, each run with its code at the base on the base's and the
//! head's inputs, compared in one comment of the pull request.

use std::path::Path;

use serde_json::Value;

use crate::github::rest::client::GitHubError;
use crate::github::rest::repo::ReadError;
use crate::github::texts::{self, CheckView};
use crate::github::thread::{Ctx, Thread, conclude, end_quietly, log_annotation};
use crate::status::{Exit, Status};
use crate::watch_spec::Watch;

use super::runner::{WatchRun, annotate_failures, config_error, folder, run_one, watches_end};

/// Largest watch file read at a ref.
const WATCH_FILE_MAX: u64 = 256 * 1024;

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
