//! `compute-bot init [DIR] [--force]`: adds the bot to a repository by writing
//! `.github/workflows/compute.yml` (comment and manual triggers),
//! `.github/workflows/compute-watches.yml` (the watches: schedule, manual
//! and pull_request triggers), `.github/compute-bot.yml` (a commented policy)
//! and a sample watch `.github/compute/sales.yml`, then prints the next steps.
//! With `--github pulls,reviews,...` the policy opts into those `github:`
//! sources, the workflows get the read permissions they need beyond what
//! they have (`actions: read` for `workflow_runs`; `issues: write` and
//! `pull-requests: write` include reading), and with pulls, reviews and
//! workflow_runs the weekly engineering-metrics watch
//! `.github/compute/engineering.yml` is written too.
//!
//! Nothing is written outside a git repository, and nothing is overwritten
//! without `--force`: either all files are written or none.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::sources::GithubSource;
use crate::status::Status;

/// The workflow `init` writes (also `examples/workflows/compute.yml`, linted by CI).
const WORKFLOW: &str = include_str!("../../examples/workflows/compute.yml");
/// The watches workflow `init` writes (also `examples/workflows/compute-watches.yml`).
const WATCHES_WORKFLOW: &str = include_str!("../../examples/workflows/compute-watches.yml");
/// The sample watch `init` writes (also `examples/compute/sales.yml`).
const SAMPLE_WATCH: &str = include_str!("../../examples/compute/sales.yml");
/// The engineering-metrics watch `init --github` writes (also `examples/compute/engineering.yml`).
const ENGINEERING_WATCH: &str = include_str!("../../examples/compute/engineering.yml");
/// Where it goes.
const ENGINEERING_WATCH_PATH: &str = ".github/compute/engineering.yml";
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
/// The job's contents permission as the example workflow has it, and with
/// `--charts`.
const CONTENTS_READ: &str = "contents: read        # checkout\n";
const CONTENTS_WRITE: &str = "contents: write       # checkout, and the charts (see above)\n";
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
    /// Give the job `contents: write` so the charts a run draws show in its
    /// answer (committed to the branch compute-bot-assets); without it the
    /// answer links the run's artifact instead.
    #[arg(long)]
    charts: bool,
    /// The `github:` sources requests may fetch, comma-separated (pulls,
    /// reviews, issues, comments, workflow_runs): written to the policy's
    /// `inputs.github`, with the workflow permissions they need.
    #[arg(long, value_name = "SOURCES", value_delimiter = ',')]
    github: Vec<String>,
}

/// The sources named by `--github`, or which name is not one.
fn sources(args: &InitArgs) -> Result<Vec<GithubSource>, String> {
    let mut out: Vec<GithubSource> = Vec::new();
    for name in args
        .github
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
    {
        let s = GithubSource::parse(name).ok_or_else(|| {
            format!(
                "--github {name:?}: not a source; the sources are {}",
                GithubSource::names()
            )
        })?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Ok(out)
}

/// The policy with `inputs.github` listing `chosen` (unchanged without any).
fn policy_text(chosen: &[GithubSource]) -> String {
    if chosen.is_empty() {
        return POLICY.to_string();
    }
    let names: Vec<&str> = chosen.iter().map(|s| s.name()).collect();
    POLICY.replacen(
        "inputs:\n",
        &format!(
            "inputs:\n  # The repository's own activity requests may fetch as github:<source>.\n  github: [{}]\n",
            names.join(", ")
        ),
        1,
    )
}

/// The permission line a workflow needs beyond its own for `chosen`
/// (`actions: read` for workflow runs), put after its `pull-requests` line.
fn with_permissions(workflow: &str, chosen: &[GithubSource]) -> String {
    if !chosen.contains(&GithubSource::WorkflowRuns) {
        return workflow.to_string();
    }
    let mut out = String::new();
    for line in workflow.split_inclusive('\n') {
        out.push_str(line);
        let t = line.trim_start();
        if t.starts_with("pull-requests: write") {
            let indent = &line[..line.len() - t.len()];
            out.push_str(&format!(
                "{indent}actions: read         # github:workflow_runs (policy inputs.github)\n"
            ));
        }
    }
    out
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
    let chosen = sources(args)?;
    let workflow = with_permissions(&workflow_text(WORKFLOW, args)?, &chosen);
    let watches = with_permissions(&workflow_text(WATCHES_WORKFLOW, args)?, &chosen);
    let policy = with_sandbox_image(policy_text(&chosen), args)?;
    let mut targets = vec![
        (WORKFLOW_PATH, workflow.as_str()),
        (WATCHES_WORKFLOW_PATH, watches.as_str()),
        (POLICY_PATH, policy.as_str()),
        (SAMPLE_WATCH_PATH, SAMPLE_WATCH),
    ];
    let engineering = [
        GithubSource::Pulls,
        GithubSource::Reviews,
        GithubSource::WorkflowRuns,
    ];
    if engineering.iter().all(|s| chosen.contains(s)) {
        targets.push((ENGINEERING_WATCH_PATH, ENGINEERING_WATCH));
    }
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

/// The policy with the sandbox image `--sandbox-image` pins (its
/// `sandbox.image`: the bot pulls it when the runner's engine lacks it).
fn with_sandbox_image(policy: String, args: &InitArgs) -> Result<String, String> {
    let Some(image) = &args.sandbox_image else {
        return Ok(policy);
    };
    let ok = image.split_once("@sha256:").is_some_and(|(name, d)| {
        !name.is_empty() && d.len() == 64 && d.chars().all(|c| c.is_ascii_hexdigit())
    });
    if !ok {
        return Err(format!(
            "--sandbox-image {image:?}: expected REGISTRY/NAME@sha256:<64 hex digits>"
        ));
    }
    Ok(policy.replace(SANDBOX_PLACEHOLDER, image))
}

/// The workflow with the pinned action filled in, when given.
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
    if args.charts {
        w = w.replace(CONTENTS_READ, CONTENTS_WRITE);
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
            "Pin the release you use: replace `OWNER/compute-bot@000…` in {WORKFLOW_PATH} and {WATCHES_WORKFLOW_PATH} and `ghcr.io/OWNER/compute-bot-sandbox@sha256:000…` in {POLICY_PATH} (`sandbox.image`; the bot pulls it) with the two lines of the release notes (or rerun with --force --action … --sandbox-image …)."
        ));
    }
    step(format!(
        "Edit {POLICY_PATH}: who may run (`who`), which files the code may read (`inputs.allow`); check it with `compute-bot policy check {POLICY_PATH}`."
    ));
    step(format!(
        "Pick the model in {WORKFLOW_PATH} (`provider`, `model`, `base_url`) and add its key as the secret COMPUTE_BOT_API_KEY: `gh secret set COMPUTE_BOT_API_KEY` (without a model only ```python blocks run)."
    ));
    if !args.charts {
        step(format!(
            "To show the charts a run draws in its answer, change `contents: read` to `contents: write` in {WORKFLOW_PATH} (or rerun with --force --charts): the bot then commits the run's files to the branch compute-bot-assets. Without it the answer links the run's artifact."
        ));
    }
    step(format!(
        "Edit the sample watch {SAMPLE_WATCH_PATH} (its code, inputs, checks and `issue`) or delete it; check the watches with `compute-bot watch check .github/compute`."
    ));
    if !args.github.is_empty() {
        step(format!(
            "The policy lets requests fetch `github:` sources ({}); ask e.g. `/compute inputs=github:pulls?state=closed&since=2026-11-01,github:reviews median hours to first review`{}.",
            args.github.join(", "),
            if args.github.iter().any(|g| g.trim() == "workflow_runs") {
                format!(
                    "; the workflows have `actions: read` for workflow runs, and {ENGINEERING_WATCH_PATH} (when pulls, reviews and workflow_runs are chosen) reports time to first review and CI failure rate weekly"
                )
            } else {
                String::new()
            }
        ));
    }
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
