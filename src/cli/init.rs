//! `compute-bot init [DIR] [--force]`: adds the bot to a repository by writing
//! `.github/workflows/compute.yml` (comment and manual triggers),
//! `.github/workflows/compute-watches.yml` (the watches: schedule, manual
//! and pull_request triggers), `.github/compute-bot.yml` (a commented policy)
//! and a sample watch `.github/compute/sales.yml`, then prints the next steps.
//!
//! Nothing is written outside a git repository, and nothing is overwritten
//! without `--force`: either all files are written or none.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::status::Status;

/// The workflow `init` writes (also `examples/workflows/compute.yml`, linted by CI).
const WORKFLOW: &str = include_str!("../../examples/workflows/compute.yml");
/// The watches workflow `init` writes (also `examples/workflows/compute-watches.yml`).
const WATCHES_WORKFLOW: &str = include_str!("../../examples/workflows/compute-watches.yml");
/// The sample watch `init` writes (also `examples/compute/sales.yml`).
const SAMPLE_WATCH: &str = include_str!("../../examples/compute/sales.yml");
/// The policy `init` writes (also `examples/compute-bot.yml`).
const POLICY: &str = include_str!("../../examples/compute-bot.yml");

/// Where the workflow goes, relative to the repository root.
const WORKFLOW_PATH: &str = ".github/workflows/compute.yml";
/// Where the watches workflow goes.
const WATCHES_WORKFLOW_PATH: &str = ".github/workflows/compute-watches.yml";
/// Where the sample watch goes: the folder the action reads by default.
const SAMPLE_WATCH_PATH: &str = ".github/compute/sales.yml";
/// Where the policy goes: the path the action reads by default.
const POLICY_PATH: &str = ".github/compute-bot.yml";

const ACTION_PLACEHOLDER: &str =
    "OWNER/compute-bot@0000000000000000000000000000000000000000 # v1.0.0";
const SANDBOX_PLACEHOLDER: &str = "ghcr.io/OWNER/compute-bot-sandbox@sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// Flags of `compute-bot init`.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The repository's directory (default: the current one).
    dir: Option<PathBuf>,
    /// Overwrite the two files if they exist.
    #[arg(long)]
    force: bool,
    /// The action to use, pinned: `OWNER/REPO@<40-hex commit>` with an optional
    /// ` # vX.Y.Z` (the release notes print it). Default: a placeholder to replace.
    #[arg(long, value_name = "REF")]
    action: Option<String>,
    /// The sandbox image by digest: `REGISTRY/NAME@sha256:<64 hex>` (the release
    /// notes print it). Default: a placeholder to replace.
    #[arg(long, value_name = "REF")]
    sandbox_image: Option<String>,
}

/// Runs `compute-bot init`: `Ok` when written, `Error` (exit 2) when nothing was written.
pub(crate) fn init_command(args: &InitArgs) -> Status {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    match init(&dir, args) {
        Ok(text) => {
            print!("{text}");
            Status::Ok
        }
        Err(msg) => {
            eprintln!("error: {msg}\nnothing was written");
            Status::Error
        }
    }
}

/// Writes both files into the repository at `dir`; returns what to print.
fn init(dir: &Path, args: &InitArgs) -> Result<String, String> {
    let root = git_root(dir).ok_or_else(|| {
        format!(
            "{} is not inside a git repository: run `git init` there first, or pass the repository's directory (compute-bot init DIR)",
            dir.display()
        )
    })?;
    let workflow = workflow_text(WORKFLOW, args)?;
    let watches = workflow_text(WATCHES_WORKFLOW, args)?;
    let targets = [
        (WORKFLOW_PATH, workflow.as_str()),
        (WATCHES_WORKFLOW_PATH, watches.as_str()),
        (POLICY_PATH, POLICY),
        (SAMPLE_WATCH_PATH, SAMPLE_WATCH),
    ];
    let existing: Vec<String> = targets
        .iter()
        .map(|(p, _)| root.join(p))
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if !existing.is_empty() && !args.force {
        return Err(format!(
            "{} already exist{}; pass --force to overwrite",
            existing.join(" and "),
            if existing.len() == 1 { "s" } else { "" }
        ));
    }
    for (rel, text) in targets {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(next_steps(&root, args))
}

/// The workflow with the pinned action and sandbox image filled in, when given.
fn workflow_text(workflow: &str, args: &InitArgs) -> Result<String, String> {
    let mut w = workflow.to_string();
    if let Some(action) = &args.action {
        let (reference, version) = action.split_once(" # ").unwrap_or((action, "pinned"));
        let ok = reference.split_once('@').is_some_and(|(repo, sha)| {
            repo.split('/').count() == 2
                && sha.len() == 40
                && sha.chars().all(|c| c.is_ascii_hexdigit())
        });
        if !ok {
            return Err(format!(
                "--action {action:?}: expected OWNER/REPO@<40 hex digits of a commit> (optionally followed by \" # vX.Y.Z\")"
            ));
        }
        w = w.replace(ACTION_PLACEHOLDER, &format!("{reference} # {version}"));
    }
    if let Some(image) = &args.sandbox_image {
        let ok = image.split_once("@sha256:").is_some_and(|(name, d)| {
            !name.is_empty() && d.len() == 64 && d.chars().all(|c| c.is_ascii_hexdigit())
        });
        if !ok {
            return Err(format!(
                "--sandbox-image {image:?}: expected REGISTRY/NAME@sha256:<64 hex digits>"
            ));
        }
        w = w.replace(SANDBOX_PLACEHOLDER, image);
    }
    Ok(w)
}

fn next_steps(root: &Path, args: &InitArgs) -> String {
    let mut s = format!(
        "wrote {WORKFLOW_PATH}, {WATCHES_WORKFLOW_PATH}, {POLICY_PATH} and {SAMPLE_WATCH_PATH} in {}\n\nNext steps:\n",
        root.display()
    );
    let mut n = 0;
    let mut step = |text: String| {
        n += 1;
        s.push_str(&format!("  {n}. {text}\n"));
    };
    if args.action.is_none() || args.sandbox_image.is_none() {
        step(format!(
            "Pin the release you use in {WORKFLOW_PATH} and {WATCHES_WORKFLOW_PATH}: replace `OWNER/compute-bot@000…` and `ghcr.io/OWNER/compute-bot-sandbox@sha256:000…` with the two lines of the release notes (or rerun with --force --action … --sandbox-image …)."
        ));
    }
    step(format!(
        "Edit {POLICY_PATH}: who may run (`who`), which files the code may read (`inputs.allow`); check it with `compute-bot policy check {POLICY_PATH}`."
    ));
    step(format!(
        "Pick the model in {WORKFLOW_PATH} (`provider`, `model`, `base_url`) and add its key as the secret COMPUTE_BOT_API_KEY: `gh secret set COMPUTE_BOT_API_KEY` (without a model only ```python blocks run)."
    ));
    step(format!(
        "Edit the sample watch {SAMPLE_WATCH_PATH} (its code, inputs, checks and `issue`) or delete it; check the watches with `compute-bot watch check .github/compute`."
    ));
    step(format!(
        "Commit and push to the default branch: `git add {WORKFLOW_PATH} {WATCHES_WORKFLOW_PATH} {POLICY_PATH} {SAMPLE_WATCH_PATH} && git commit -m 'Add compute-bot' && git push`; then comment `/compute <goal>` on an issue."
    ));
    s
}

/// The top of the git work tree containing `dir` (a `.git` directory or file).
fn git_root(dir: &Path) -> Option<PathBuf> {
    let start = std::fs::canonicalize(dir).ok()?;
    start
        .ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}
