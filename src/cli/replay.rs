//! `compute-bot replay REPORT.json | --comment URL|ID`: repeat a recorded run.
//!
//! Exit status: 0 reproduced, 1 differs, 2 a precondition does not hold
//! (code, input or image hash; a changed input is none with
//! `--changed-inputs`) or a usage error.

use std::path::PathBuf;

use clap::Args;

use crate::github::actions::event::{RepoRef, Secret};
use crate::github::rest::client::GitHub;
use crate::replay::{
    ChangedInputs, EXIT_MISMATCH, Recorded, ReplayError, environments_for, replay, resolve_inputs,
    runtime_for,
};
use crate::sandbox::{Runtime, Session};

use super::{Format, resolve_runtime};

/// Flags of `compute-bot replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// A JSON report (`compute-bot run --format json`, or the action's `report_path`).
    #[arg(value_name = "REPORT.json", required_unless_present = "comment")]
    report: Option<PathBuf>,
    /// Read the record from a posted comment instead: its URL
    /// (`https://github.com/o/r/issues/1#issuecomment-123`) or id (with
    /// --repo or GITHUB_REPOSITORY). Uses GITHUB_TOKEN and GITHUB_API_URL.
    #[arg(long, value_name = "URL|ID", conflicts_with = "report")]
    comment: Option<String>,
    /// The repository (`owner/name`) of a comment given by id.
    #[arg(long, value_name = "OWNER/NAME")]
    repo: Option<String>,
    /// An input file, matched to the record by its name: the path ends with
    /// it (`sales.csv`; `github:` data as `…/github/pulls.csv`, as kept in
    /// the run's artifact). Default: the recorded path under --workspace.
    /// Repeatable.
    #[arg(long = "input", value_name = "PATH")]
    inputs: Vec<PathBuf>,
    /// Where recorded input paths are looked up (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    workspace: PathBuf,
    /// Replay on inputs that changed since the run: an input whose sha256
    /// differs from the record's is run as it is now instead of stopping
    /// the replay (exit 2). The verdict (`reproduced` or `differs`) names
    /// each changed input with both hashes and sizes (`changed_inputs` in
    /// JSON) and, for a session, the first step whose output differs —
    /// the step that first sees the change. A missing input, other code or
    /// another image still stop the replay.
    #[arg(long)]
    changed_inputs: bool,
    /// Run this image reference instead of the recorded one; its id must
    /// still be the recorded id.
    #[arg(long)]
    image: Option<String>,
    /// Run under this OCI runtime instead of the recorded one (the verdict
    /// notes it). Default: the recorded runtime; for records without one,
    /// COMPUTE_BOT_RUNTIME, else runc.
    #[arg(long, value_enum)]
    runtime: Option<Runtime>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// The comment id and repository named by `--comment` (a URL or an id).
fn parse_comment_ref(text: &str, repo: Option<&str>) -> Result<(u64, Option<RepoRef>), String> {
    let t = text.trim();
    if let Ok(id) = t.parse::<u64>() {
        let repo = repo
            .map(|r| RepoRef::parse(r, "--repo").map_err(|e| e.to_string()))
            .transpose()?;
        return Ok((id, repo));
    }
    let bad = || {
        format!(
            "--comment `{t}` is neither a comment id nor a comment URL like \
             https://github.com/OWNER/REPO/issues/1#issuecomment-123"
        )
    };
    let (path, frag) = t.split_once('#').ok_or_else(bad)?;
    let id = frag
        .strip_prefix("issuecomment-")
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(bad)?;
    let parts: Vec<&str> = path
        .split("://")
        .nth(1)
        .unwrap_or(path)
        .split('/')
        .collect();
    // host/OWNER/REPO/(issues|pull)/N
    let repo = match parts.as_slice() {
        [_, owner, name, kind, _, ..] if *kind == "issues" || *kind == "pull" => Some(RepoRef {
            owner: owner.to_string(),
            name: name.to_string(),
        }),
        _ => return Err(bad()),
    };
    Ok((id, repo))
}

async fn load_comment(args: &ReplayArgs, text: &str) -> Result<Recorded, String> {
    let env_repo = std::env::var("GITHUB_REPOSITORY").ok();
    let (id, repo) = parse_comment_ref(text, args.repo.as_deref().or(env_repo.as_deref()))?;
    let repo = repo.ok_or(
        "a comment id needs its repository: pass --repo OWNER/NAME (or set GITHUB_REPOSITORY), or give the comment's URL",
    )?;
    let token = std::env::var("GITHUB_TOKEN")
        .or_else(|_| std::env::var("GH_TOKEN"))
        .map_err(|_| "reading a comment needs a token: set GITHUB_TOKEN (read access to the repository's issues)".to_string())?;
    let api = std::env::var("GITHUB_API_URL").unwrap_or_else(|_| "https://api.github.com".into());
    let gh = GitHub::new(&api, &Secret::new(token), repo).map_err(|e| e.to_string())?;
    let comment = gh
        .comment(id)
        .await
        .map_err(|e| format!("comment {id} cannot be read: {e}"))?;
    let source = if comment.html_url.is_empty() {
        format!("comment {id}")
    } else {
        comment.html_url.clone()
    };
    Recorded::from_comment_body(&comment.body, &source)
}

fn fail(e: &str) -> i32 {
    eprintln!("error: {e}");
    EXIT_MISMATCH
}

/// Runs `compute-bot replay` and returns the exit status.
pub(crate) async fn replay_command(args: ReplayArgs, session: &Session) -> i32 {
    let rec = match (&args.report, &args.comment) {
        (Some(p), _) => Recorded::from_report_file(p),
        (None, Some(c)) => load_comment(&args, c).await,
        (None, None) => Err("give a report file or --comment URL|ID".to_string()),
    };
    let rec = match rec {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let code_problem = crate::replay::code_mismatch(&rec);
    let on_changed = if args.changed_inputs {
        ChangedInputs::Run
    } else {
        ChangedInputs::Refuse
    };
    let inputs = resolve_inputs(&rec.record, &args.inputs, &args.workspace, on_changed);
    let problems: Vec<String> = code_problem
        .into_iter()
        .chain(inputs.as_ref().err().cloned().unwrap_or_default())
        .collect();
    if !problems.is_empty() {
        return fail(&format!("cannot replay:\n{}", problems.join("\n")));
    }
    let (inputs, changed) = inputs.unwrap_or_default();
    // Flag, else the record's; an old record falls back to the machine's default.
    let fallback = match resolve_runtime(None, None) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let runtime = runtime_for(&rec, args.runtime, fallback);
    let sandbox = match session.sandbox(&environments_for(&rec)).await {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    let verdict = replay(
        sandbox,
        &rec,
        inputs,
        &changed,
        args.image.as_deref(),
        runtime,
    )
    .await;
    match verdict {
        Ok(v) => {
            match args.format {
                Format::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&v).expect("verdict serializes")
                ),
                _ => print!("{}", v.text()),
            }
            v.exit_code()
        }
        Err(ReplayError::Mismatch(p)) => fail(&format!("cannot replay:\n{}", p.join("\n"))),
        Err(ReplayError::Sandbox(e)) if e.is_configuration() => fail(&e.to_string()),
        Err(ReplayError::Sandbox(e)) => {
            eprintln!("error: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_urls_and_ids_are_understood() {
        let (id, repo) = parse_comment_ref(
            "https://github.com/acme/data/issues/7#issuecomment-1234",
            None,
        )
        .unwrap();
        assert_eq!(id, 1234);
        let repo = repo.unwrap();
        assert_eq!((repo.owner.as_str(), repo.name.as_str()), ("acme", "data"));
        let (id, repo) = parse_comment_ref("99", Some("o/r")).unwrap();
        assert_eq!((id, repo.unwrap().name.as_str()), (99, "r"));
        assert!(parse_comment_ref("99", None).unwrap().1.is_none());
        let e = parse_comment_ref("https://github.com/acme/data/issues/7", None).unwrap_err();
        assert!(e.contains("neither a comment id"), "{e}");
    }
}
