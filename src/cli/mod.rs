//! The command line: `compute-bot run`, `compute-bot policy check`, `compute-bot action`.
//!
//! Exit status everywhere: 0 ok, 1 the code failed or was stopped, 2 usage or
//! configuration error, 3 needs a human approval.

mod answer;
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
    Run(Box<RunArgs>),
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

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One JSON object.
    Json,
    /// A short human-readable summary (progress on stderr).
    Text,
    /// Exactly what would be posted to GitHub (needs the loop: implies it).
    Markdown,
}

/// Flags of `compute-bot run`.
///
/// With only `--code` it runs the file in the sandbox and prints the sandbox
/// outcome. With `--goal`, `--policy`, `--schema` or `--format markdown` it
/// runs the whole loop (plan, generate, check, run, validate, explain) and
/// prints the report.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The Python file to run (exactly this code; no generation).
    #[arg(long, value_name = "FILE", required_unless_present = "goal")]
    pub code: Option<PathBuf>,
    /// The question, in words; a ```python block inside it is run as is.
    #[arg(long, value_name = "TEXT")]
    pub goal: Option<String>,
    /// The policy file (default: the built-in data-analysis policy).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// A JSON Schema (JSON or YAML file) the result must match.
    #[arg(long, value_name = "FILE")]
    pub schema: Option<PathBuf>,
    /// An input file; it appears read-only as /data/<file name>. Repeatable.
    #[arg(long = "input", value_name = "PATH")]
    pub inputs: Vec<PathBuf>,
    /// Sandbox image (tag or digest; default: the policy's, else compute-bot-sandbox:python).
    #[arg(long)]
    pub image: Option<String>,
    /// Model provider: openai (any OpenAI-compatible endpoint) or anthropic.
    #[arg(long)]
    pub provider: Option<crate::model::Provider>,
    /// Model name (else COMPUTE_BOT_MODEL).
    #[arg(long)]
    pub model: Option<String>,
    /// Provider base URL (else COMPUTE_BOT_BASE_URL).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Wall-clock limit, e.g. 10s or 1500ms (with a policy: may only tighten it).
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
    /// OCI runtime: runc (with compute-bot's seccomp allowlist) or runsc (gVisor).
    #[arg(long, value_enum)]
    pub runtime: Option<crate::sandbox::Runtime>,
    /// Write the files the code left in /out into this directory.
    #[arg(long, value_name = "DIR")]
    pub artifacts: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Resolves when the process is asked to stop: Ctrl-C (SIGINT) or SIGTERM
/// (a cancelled CI job). Callers then remove their sandbox containers.
pub async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
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
        Command::Run(args) => run_command(*args).await,
        Command::Policy(PolicyCommand::Check {
            policy,
            code,
            format,
        }) => crate::policy::cli::check_command(&policy, code.as_deref(), format == Format::Json),
        Command::Action => crate::github::action::run_from_process_env().await,
    }
}
