//! `compute-bot watch check [DIR]`: validates the watch files of a folder
//! (default `.github/compute`) and lists what each watch runs.

use std::path::PathBuf;

use clap::Subcommand;

use crate::status::Status;
use crate::watch::{DEFAULT_DIR, load_dir};

/// `compute-bot watch ...`
#[derive(Debug, Subcommand)]
pub(crate) enum WatchCommand {
    /// Validate every watch file in DIR (`*.yml`, `*.yaml`); print each
    /// watch, or every problem as `file:line:column: message` (exit 2).
    Check {
        /// The folder of watch files.
        #[arg(default_value = DEFAULT_DIR)]
        dir: PathBuf,
    },
}

/// Runs a `watch` subcommand.
pub(crate) fn watch_command(cmd: &WatchCommand) -> Status {
    match cmd {
        WatchCommand::Check { dir } => check(dir),
    }
}

fn check(dir: &std::path::Path) -> Status {
    let shown = dir.display().to_string();
    if !dir.is_dir() {
        eprintln!(
            "error: {shown}: no such folder; watch files live in {DEFAULT_DIR}/*.yml (or name the folder)"
        );
        return Status::Error;
    }
    match load_dir(dir, &shown) {
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
