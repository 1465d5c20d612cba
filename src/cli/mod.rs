//! The command line: `compute-bot run`, `compute-bot policy check`, `compute-bot action`.
//!
//! Exit status everywhere: 0 ok, 1 the code failed or was stopped, 2 usage or
//! configuration error, 3 needs a human approval.

mod run;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use run::run_command;

/// Exit status for usage and configuration errors.
pub const EXIT_USAGE: i32 = 2;

/// compute-bot: answers computational questions with code it actually ran in a locked-down sandbox.
#[derive(Debug, Parser)]
#[command(name = "compute-bot", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run code (or answer a goal) in the sandbox and print the outcome.
    Run(RunArgs),
    /// Policy files: check one, or check code against one.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Run as a GitHub Action: read the event, answer, post the result.
    Action,
}

/// `compute-bot policy ...`
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Validate POLICY and print the effective policy (exit 0 or 2); with
    /// --code, check the code and print the verdict (exit 0 allow, 1 deny,
    /// 3 escalate).
    Check {
        /// The policy file.
        policy: PathBuf,
        /// A Python file to check against the policy.
        #[arg(long, value_name = "FILE")]
        code: Option<PathBuf>,
        /// Output format of the verdict.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

/// Output formats of `run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One JSON object.
    Json,
    /// A short human-readable summary.
    Text,
}

/// Flags of `compute-bot run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The Python file to run.
    #[arg(long, value_name = "FILE")]
    pub code: PathBuf,
    /// An input file; it appears read-only as /data/<file name>. Repeatable.
    #[arg(long = "input", value_name = "PATH")]
    pub inputs: Vec<PathBuf>,
    /// Sandbox image (tag or digest).
    #[arg(long, default_value = crate::sandbox::DEFAULT_IMAGE)]
    pub image: String,
    /// Wall-clock limit, e.g. 10s or 1500ms.
    #[arg(long, value_parser = parse_duration_arg)]
    pub timeout: Option<std::time::Duration>,
    /// Memory limit, e.g. 256MiB (swap is disabled).
    #[arg(long)]
    pub memory: Option<crate::units::ByteSize>,
    /// CPU quota in cores, e.g. 1 or 0.5.
    #[arg(long)]
    pub cpus: Option<f64>,
    /// Maximum number of processes and threads.
    #[arg(long)]
    pub pids: Option<i64>,
    /// Write the files the code left in /out into this directory.
    #[arg(long, value_name = "DIR")]
    pub artifacts: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

fn parse_duration_arg(s: &str) -> Result<std::time::Duration, String> {
    crate::units::parse_duration(s).map_err(|e| e.to_string())
}

/// Parses the process arguments and runs the command; returns the exit status.
pub async fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { 0 };
        }
    };
    match cli.command {
        Command::Run(args) => run_command(args).await,
        Command::Policy(PolicyCommand::Check {
            policy,
            code,
            format,
        }) => crate::policy::cli::check_command(&policy, code.as_deref(), format == Format::Json),
        Command::Action => crate::github::action::run_from_process_env().await,
    }
}
