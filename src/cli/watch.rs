//! `compute-bot watch check [DIR]`: validates the watch files of a folder
//! (default `.github/compute`) and lists what each watch runs. The
//! `github:` sources are read in their query syntax by the watch reader,
//! and checked against the policy (`inputs.github`, `inputs.github_max_items`)
//! here when the policy is known: `--policy FILE`, else the file the Action
//! would find in the current directory.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::github::action::DEFAULT_POLICY_PATHS;
use crate::policy::Policy;
use crate::status::Status;
use crate::watch_spec::{DEFAULT_DIR, Watch, WatchError, load_dir};

/// `compute-bot watch ...`
#[derive(Debug, Subcommand)]
pub(crate) enum WatchCommand {
    /// Validate every watch file in DIR (`*.yml`, `*.yaml`); print each
    /// watch, or every problem as `file:line:column: message` (exit 2).
    Check {
        /// The folder of watch files.
        #[arg(default_value = DEFAULT_DIR)]
        dir: PathBuf,
        /// The policy the watches run under, to check their `github:`
        /// sources against `inputs.github` (default: `.github/compute-bot.yml`
        /// or `.github/compute-policy.yml` here, as the Action finds it).
        #[arg(long)]
        policy: Option<PathBuf>,
    },
}

/// Runs a `watch` subcommand.
pub(crate) fn watch_command(cmd: &WatchCommand) -> Status {
    match cmd {
        WatchCommand::Check { dir, policy } => check(dir, policy.as_deref()),
    }
}

/// The policy named, else the first of the Action's default paths that
/// exists here; `None` when there is none (the sources are then checked for
/// their syntax only). The path is shown in messages.
fn policy_for(named: Option<&Path>) -> Result<Option<(Policy, String)>, String> {
    let path = match named {
        Some(p) => p.to_path_buf(),
        None => match DEFAULT_POLICY_PATHS
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
        {
            Some(p) => p,
            None => return Ok(None),
        },
    };
    Policy::load(&path)
        .map(|p| Some((p, path.display().to_string())))
        .map_err(|e| e.to_string())
}

/// What the policy says against the watches' `github:` sources, each placed
/// at its entry: not opted in (`inputs.github`), `limit` over
/// `inputs.github_max_items`.
fn policy_problems(watches: &[Watch], policy: &Policy) -> Vec<WatchError> {
    let mut out = Vec::new();
    for w in watches {
        for (i, spec) in w.inputs.iter().enumerate() {
            if let Ok(q) = crate::sources::parse(spec)
                && let Some(p) = policy.inputs.github_problem(&q)
            {
                out.push(w.at_input(i, format!("input `{}`: {p}", spec.trim())));
            }
        }
    }
    out
}

fn check(dir: &Path, policy: Option<&Path>) -> Status {
    let policy = match policy_for(policy) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return Status::Error;
        }
    };
    let shown = dir.display().to_string();
    if !dir.is_dir() {
        eprintln!(
            "error: {shown}: no such folder; watch files live in {DEFAULT_DIR}/*.yml (or name the folder)"
        );
        return Status::Error;
    }
    let loaded = load_dir(dir, &shown).and_then(|watches| {
        let problems = policy
            .as_ref()
            .map(|(p, _)| policy_problems(&watches, p))
            .unwrap_or_default();
        if problems.is_empty() {
            Ok(watches)
        } else {
            Err(problems)
        }
    });
    match loaded {
        Ok(watches) if watches.is_empty() => {
            println!("{shown}: no watch files (*.yml, *.yaml)");
            Status::Ok
        }
        Ok(watches) => {
            for w in &watches {
                let what = match (&w.code, &w.code_sha256) {
                    (Some(c), _) => {
                        format!("code sha256 {}", crate::sandbox::sha256_hex(c.as_bytes()))
                    }
                    (None, Some(pin)) => format!("goal, pinned code sha256 {pin}"),
                    (None, None) => "goal".to_string(),
                };
                let issue = w
                    .issue
                    .map(|n| format!("issue #{n}"))
                    .unwrap_or_else(|| "no issue (job summary only)".into());
                println!(
                    "{}: ok — `{}`: {what}; {} input(s); {} check(s); tolerance {}; {issue}",
                    w.file,
                    w.name,
                    w.inputs.len(),
                    w.checks.len(),
                    w.tolerance
                );
            }
            let sources = watches
                .iter()
                .any(|w| w.inputs.iter().any(|i| crate::sources::is_source(i)));
            match &policy {
                Some((_, file)) if sources => {
                    println!("github: sources checked against the policy {file}");
                }
                None if sources => println!(
                    "note: github: sources checked for their syntax only; no policy file here ({}), so whether the policy allows them (`inputs.github`) is not known; pass --policy FILE",
                    DEFAULT_POLICY_PATHS.join(", ")
                ),
                _ => {}
            }
            Status::Ok
        }
        Err(errors) => {
            for e in errors {
                eprintln!("{e}");
            }
            Status::Error
        }
    }
}
