//! The command line: `compute-bot run`, `compute-bot policy check`, `compute-bot action`.
//!
//! Every command returns a [`Status`]; [`main`] pairs it with the front end
//! ([`Exit`]) and `main.rs` alone turns that into the process exit (see
//! [`Status::exit_code`]).

mod answer;
mod doctor;
mod files;
mod init;
mod replay;
mod run;
mod run_cells;
mod unchecked;
mod watch;

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::admit::{Admitted, Allow, Workspace, admit};
use crate::policy::Inputs;
use crate::sandbox::{Outcome, RUNTIME_VARIABLE, RunStatus, Runtime, Session};
use crate::status::{Exit, Front, Status, stop_signal};

use run::run_command;

/// compute-bot: answers computational questions with code it actually ran in a locked-down sandbox.
#[derive(Debug, Parser)]
#[command(name = "compute-bot", version, about)]
struct Cli {
    /// What to do.
    #[command(subcommand)]
    command: CliCommand,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum CliCommand {
    /// Run code (or answer a goal) in the sandbox and print the outcome.
    Run(Box<RunArgs>),
    /// Policy files: check one, or check code against one.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Run as a GitHub Action: read the event, answer, post the result.
    Action,
    /// Repeat a recorded run (from a JSON report or a posted comment) and
    /// say whether it reproduced (exit 0), differs (1) or cannot be
    /// replayed because the code, an input or the image changed (2).
    Replay(Box<replay::ReplayArgs>),
    /// Add the bot to a repository: write the workflow and a commented policy.
    Init(init::InitArgs),
    /// Check Docker, the sandbox image, the runtime, the policy, the model and the token.
    Doctor(doctor::DoctorArgs),
    /// Watch files (`.github/compute/*.yml`): check them.
    #[command(subcommand)]
    Watch(watch::WatchCommand),
}

/// `compute-bot policy ...`
#[derive(Debug, Subcommand)]
enum PolicyCommand {
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
enum Format {
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
struct RunArgs {
    /// The Python file to run (exactly this code; no generation), or a
    /// Jupyter notebook (`.ipynb`) whose code cells run joined in order.
    #[arg(long, value_name = "FILE", required_unless_present = "goal")]
    code: Option<PathBuf>,
    /// The question, in words; a ```python block inside it is run as is.
    #[arg(long, value_name = "TEXT")]
    goal: Option<String>,
    /// The policy file (default: the built-in data-analysis policy).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// A JSON Schema (JSON or YAML file) the result must match.
    #[arg(long, value_name = "FILE")]
    schema: Option<PathBuf>,
    /// An input file inside the current directory; it appears read-only as
    /// `/data/<file name>`. Repeatable.
    #[arg(long = "input", value_name = "PATH")]
    inputs: Vec<PathBuf>,
    /// Sandbox image (tag or digest; default: the policy's, else compute-bot-sandbox:python).
    #[arg(long)]
    image: Option<String>,
    /// Model provider: openai (any OpenAI-compatible endpoint) or anthropic.
    #[arg(long)]
    provider: Option<crate::model::Provider>,
    /// Model name (else COMPUTE_BOT_MODEL).
    #[arg(long)]
    model: Option<String>,
    /// Provider base URL (else COMPUTE_BOT_BASE_URL).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Wall-clock limit, e.g. 10s or 1500ms (with a policy: may only tighten it).
    #[arg(long, value_parser = parse_duration_arg)]
    timeout: Option<std::time::Duration>,
    /// Memory limit, e.g. 256MiB (swap is disabled).
    #[arg(long)]
    memory: Option<crate::units::ByteSize>,
    /// CPU quota in cores, e.g. 1 or 0.5.
    #[arg(long)]
    cpus: Option<f64>,
    /// Maximum number of processes and threads.
    #[arg(long)]
    pids: Option<i64>,
    /// Run the code N times in all, each in a fresh container, and flag a
    /// result that changes (raises the policy's `output.repeat`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=10))]
    repeat: Option<u8>,
    /// OCI runtime: runc (with compute-bot's seccomp allowlist) or runsc
    /// (gVisor). Default: the policy's, else COMPUTE_BOT_RUNTIME, else runc.
    #[arg(long, value_enum)]
    runtime: Option<crate::sandbox::Runtime>,
    /// Run the --code file with no policy: no static check and no runtime
    /// refusals, only the container (network none, read-only root, no
    /// capabilities, non-root, limits, seccomp or gVisor). For probing the
    /// sandbox itself; the output says so first, the JSON has
    /// "unchecked": true. Not with --goal, --policy, --schema, --repeat.
    #[arg(long)]
    unchecked: bool,
    /// Write the files the code left in /out into this directory, and the
    /// run as a Jupyter notebook (`<code file name>.ipynb`, else
    /// `answer.ipynb`; another name when the code wrote one of that name).
    #[arg(long, value_name = "DIR")]
    artifacts: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

fn parse_duration_arg(s: &str) -> Result<std::time::Duration, String> {
    crate::units::parse_duration(s).map_err(|e| e.to_string())
}

/// Prints a usage / configuration error: [`Status::Error`] (exit 2).
pub(crate) fn usage(msg: &str) -> Status {
    eprintln!("error: {msg}");
    Status::Error
}

/// The code of `--code FILE`, as it runs.
pub(crate) type CodeFile = crate::notebook::cells::Program;

/// Reads `--code FILE`: a UTF-8 Python file as it is, or (named `.ipynb`) a
/// Jupyter notebook whose code cells make the program
/// ([`crate::notebook::cells::program`]); `steps`: the cells run as the
/// steps of one session (the note says so), else as one program. The error
/// names the file and what to pass instead.
pub(crate) fn read_code(path: &Path, steps: bool) -> Result<CodeFile, String> {
    if !crate::notebook::cells::is_notebook(path) {
        let code = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "code file `{}` cannot be read: {e}; pass a UTF-8 Python file with --code",
                path.display()
            )
        })?;
        return Ok(CodeFile { code, note: None });
    }
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        format!("notebook `{shown}` cannot be read: {e}; pass an `.ipynb` file or a Python file with --code")
    })?;
    crate::notebook::cells::program(&bytes, &shown, steps)
}

/// The `--input` files, admitted with the current directory as the
/// workspace under `inputs` (the policy's section, or the built-in one):
/// every refused file on its own line.
pub(crate) fn admit_inputs(paths: &[PathBuf], inputs: &Inputs) -> Result<Vec<Admitted>, String> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let named: Vec<String> = paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    // The command line reads files only: a `github:` source is fetched by
    // the Action and watches (with the job's token); its data is kept in the
    // run's artifact and on the files branch as CSV files to pass here.
    if let Some(source) = named.iter().find(|n| n.trim().starts_with("github:")) {
        return Err(format!(
            "input `{source}`: `github:` sources are fetched by the Action and watches only; pass the CSV a run kept (`runs/<run>-<attempt>/github/<source>.csv` in its artifact or on the files branch) with --input: here it is /data/<source>.csv, as any file (`compute-bot replay` puts it back at /data/github/<source>.csv)"
        ));
    }
    let ws = Workspace::current_dir()?;
    admit(&ws, &named, Allow::Policy(inputs)).map_err(|refused| {
        let lines: Vec<String> = refused.iter().map(|r| format!("input {r}")).collect();
        lines.join("\n")
    })
}

/// The runtime of a command: the flag, else the policy's (or the record's),
/// else `COMPUTE_BOT_RUNTIME`, else runc. The one place the command line
/// reads that variable.
pub(crate) fn resolve_runtime(
    flag: Option<Runtime>,
    configured: Option<Runtime>,
) -> Result<Runtime, String> {
    let machine = std::env::var(RUNTIME_VARIABLE).ok();
    Runtime::resolve(flag, configured, machine.as_deref())
}

/// Parses the process arguments and runs the command; returns how it
/// ended. This is the one place that waits for SIGINT / SIGTERM: the
/// command's future is dropped then, and the run ends
/// [`Status::Interrupted`] (exit 130). Either way the engine session is
/// closed last, so no container outlives the command.
pub async fn main() -> Exit {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return Exit::cli(if e.use_stderr() {
                Status::Error
            } else {
                Status::Ok
            });
        }
    };
    let front = match cli.command {
        CliCommand::Action => Front::Action,
        _ => Front::Cli,
    };
    let session = Session::default();
    let work = async {
        match cli.command {
            CliCommand::Run(args) => Exit::cli(run_command(*args, &session).await),
            CliCommand::Policy(PolicyCommand::Check {
                policy,
                code,
                format,
            }) => Exit::cli(status_from_code(crate::policy::cli::check_command(
                &policy,
                code.as_deref(),
                format == Format::Json,
            ))),
            CliCommand::Action => crate::github::action::run_from_process_env(&session).await,
            CliCommand::Init(args) => Exit::cli(init::init_command(&args)),
            CliCommand::Doctor(args) => Exit::cli(doctor::doctor_command(&args).await),
            CliCommand::Watch(cmd) => Exit::cli(watch::watch_command(&cmd)),
            CliCommand::Replay(args) => Exit::cli(status_from_code(
                replay::replay_command(*args, &session).await,
            )),
        }
    };
    let finished = tokio::select! {
        exit = work => Some(exit),
        _ = stop_signal() => None,
    };
    // Before any message: a dropped command's containers are gone after it.
    session.close().await;
    finished.unwrap_or_else(|| {
        interrupted(front);
        Exit {
            status: Status::Interrupted,
            front,
            unposted: false,
        }
    })
}

/// Says that the run was interrupted, once its containers are gone.
fn interrupted(front: Front) {
    match front {
        Front::Action => crate::github::action::log_interrupted(),
        Front::Cli => eprintln!("interrupted: the sandbox container was removed"),
    }
}

/// `policy check`'s and `replay`'s exit codes as a status (0 ok, 1 failed or
/// denied/differs, 3 escalate, anything else a configuration error).
fn status_from_code(code: i32) -> Status {
    use crate::policy::cli::{EXIT_ALLOW, EXIT_DENY, EXIT_ESCALATE};
    match code {
        EXIT_ALLOW => Status::Ok,
        EXIT_DENY => Status::Failed,
        EXIT_ESCALATE => Status::NeedsApproval,
        _ => Status::Error,
    }
}

/// A short terminal summary of an outcome (`run` and its cells print it).
fn outcome_text(o: &Outcome) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "status: {}  exit code: {}  duration: {} ms\n",
        o.status.as_str(),
        o.exit_code.map_or("-".to_string(), |c| c.to_string()),
        o.duration_ms
    ));
    if let Some(m) = o.resources.peak_memory_bytes {
        s.push_str(&format!(
            "peak memory: {:.1} MiB  cpu time: {} ms\n",
            m as f64 / 1048576.0,
            o.resources.cpu_time_ms.unwrap_or(0)
        ));
    }
    let streams = [
        ("stdout", &o.stdout, o.stdout_truncated),
        ("stderr", &o.stderr, o.stderr_truncated),
    ];
    for (name, text, truncated) in streams.into_iter().filter(|(_, t, _)| !t.is_empty()) {
        let cut = if truncated { " (truncated)" } else { "" };
        s.push_str(&format!("--- {name}{cut} ---\n{text}"));
        if !text.ends_with('\n') {
            s.push('\n');
        }
    }
    for a in &o.artifacts {
        s.push_str(&format!(
            "artifact: {} ({} bytes, sha256 {})\n",
            a.name, a.size, a.sha256
        ));
    }
    let au = &o.audit;
    if !au.network_attempts.is_empty() {
        s.push_str(&format!(
            "network attempts: {}\n",
            au.network_attempts.join(", ")
        ));
    }
    if !au.subprocess_attempts.is_empty() {
        s.push_str(&format!(
            "subprocess attempts: {}\n",
            au.subprocess_attempts.join(", ")
        ));
    }
    if o.status == RunStatus::Timeout {
        s.push_str(&format!(
            "stopped: the {} ms deadline passed\n",
            o.limits.timeout.as_millis()
        ));
    }
    if let Some(env) = &o.environment {
        s.push_str(&format!("environment: {}\n", env.line()));
    }
    for n in &o.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}
