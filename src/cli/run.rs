//! `compute-bot run`: the code, the inputs and the limits in; one outcome out.

use std::path::Path;

use crate::policy::Policy;
use crate::sandbox::{Job, Outcome, SandboxConfig, Session};

use super::{
    Format, RunArgs, admit_inputs, read_code, resolve_runtime, run_cells, unchecked, usage,
};
use crate::status::Status;

/// Writes the artifacts of an outcome into `dir`, and the run of `code`
/// (read from `code_file`) as a notebook ([`super::files::run_notebook`]).
fn write_artifacts(
    outcome: &Outcome,
    code: &str,
    code_file: &Path,
    dir: &Path,
) -> std::io::Result<()> {
    crate::sandbox::write_files(&outcome.artifacts, dir)?;
    let notebook = super::files::run_notebook(&[(code, outcome)], Some(code_file), dir);
    crate::sandbox::write_files(std::slice::from_ref(&notebook), dir).map(|_| ())
}

/// Runs `compute-bot run` and returns how it ended.
pub(crate) async fn run_command(args: RunArgs, session: &Session) -> Status {
    if args.unchecked
        && let Some(e) = unchecked::conflict(&args)
    {
        return usage(&e);
    }
    if args.goal.is_some()
        || args.policy.is_some()
        || args.schema.is_some()
        || args.repeat.is_some()
        || args.format == Format::Markdown
    {
        return super::answer::answer_command(args, session).await;
    }
    let Some(code_path) = args.code.as_deref() else {
        return usage("give --code FILE, or --goal TEXT");
    };
    // No --policy: the built-in data-analysis policy applies (as `--help` says):
    // its inputs section, its static check first, then its runtime rules
    // inside the sandbox.
    let policy = Policy::default();
    let steps = !args.unchecked && policy.session.in_steps();
    let (code, note) = match read_code(code_path, steps) {
        Ok(c) => (c.code, c.note),
        Err(e) => return usage(&e),
    };
    // Two or more `# %%` cells run as the steps of one session.
    let cells = crate::agent::exact_cells(&code, steps);
    let inputs = match admit_inputs(&args.inputs, &policy.inputs) {
        Ok(admitted) => admitted.into_iter().map(|a| a.file).collect(),
        Err(e) => {
            return usage(&format!(
                "{e}\n(the built-in policy's `inputs` section applies; pass --policy FILE to use another)"
            ));
        }
    };
    let runtime = match resolve_runtime(args.runtime, policy.sandbox.runtime) {
        Ok(r) => r,
        Err(e) => return usage(&e),
    };
    let mut cfg = sandbox_config(&args, runtime);
    // Unchecked: no static check, no preload and (below) no runtime rules;
    // the inputs are still admitted (that protects the host, not a policy
    // rule). Checked code preloads its heavy imports, as in the Action.
    if args.unchecked {
        unchecked::warn(args.format == Format::Json);
    } else {
        let checked = check_builtin(&policy, &code, args.format).and_then(|v| {
            match cells
                .as_deref()
                .map(|c| run_cells::check_cells(&policy, &code, c))
            {
                Some(Err(refused)) => Err(print_refusal(refused, args.format)),
                _ => Ok(v),
            }
        });
        match checked {
            Ok(verdict) => cfg.preload = policy.preload_of(&verdict),
            Err(status) => {
                // The findings' lines are the joined program's.
                if let Some(n) = &note {
                    eprintln!("note: {n}");
                }
                return status;
            }
        }
    }
    let job = Job {
        code,
        inputs,
        rules: if args.unchecked {
            unchecked::rules()
        } else {
            policy.runtime_rules()
        },
    };
    if let Some(cells) = &cells {
        return run_as_steps(&args, session, &policy, &cfg, &job, cells, note).await;
    }
    // Dropped (Ctrl-C, SIGTERM), the run's container goes when `cli::main`
    // closes the session.
    let run = async {
        session
            .sandbox(&policy.sandbox.environments())
            .await?
            .run(&cfg, &job)
            .await
    };
    let mut outcome = match run.await {
        Ok(o) => o,
        Err(e) if e.is_configuration() => return usage(&e.to_string()),
        Err(e) => {
            eprintln!("error: {e}");
            return Status::Failed;
        }
    };
    outcome.notes.extend(note);
    if let Some(dir) = &args.artifacts
        && let Err(e) = write_artifacts(&outcome, &job.code, code_path, dir)
    {
        eprintln!("error: could not write artifacts to {}: {e}", dir.display());
    }
    print_outcome(&outcome, &args);
    if outcome.exit_code == Some(0) && !outcome.timed_out && !outcome.oom_killed {
        Status::Ok
    } else {
        Status::Failed
    }
}

/// Runs the cells of `run --code` as steps, prints them and writes the
/// session's notebook under `--artifacts`.
async fn run_as_steps(
    args: &RunArgs,
    session: &Session,
    policy: &Policy,
    cfg: &SandboxConfig,
    job: &Job,
    cells: &[crate::notebook::cells::CodeCell],
    note: Option<String>,
) -> Status {
    let ran = async {
        let executor = session.sandbox(&policy.sandbox.environments()).await?;
        run_cells::run_steps(executor, cfg, job, cells).await
    };
    let mut outcomes = match ran.await {
        Ok(o) => o,
        Err(e) if e.is_configuration() => return usage(&e.to_string()),
        Err(e) => {
            eprintln!("error: {e}");
            return Status::Failed;
        }
    };
    if let Some(last) = outcomes.last_mut() {
        last.notes.extend(note);
    }
    if let (Some(dir), Some(code_path)) = (&args.artifacts, &args.code)
        && let Err(e) = run_cells::write_steps(&outcomes, cells, code_path, dir)
    {
        eprintln!("error: could not write artifacts to {}: {e}", dir.display());
    }
    run_cells::print_steps(&outcomes, cells, args);
    run_cells::status_of(&outcomes, cells)
}

/// The sandbox configuration of `run --code`: the built-in limits, tightened
/// or loosened by the flags (no policy to hold them to).
fn sandbox_config(args: &RunArgs, runtime: crate::sandbox::Runtime) -> SandboxConfig {
    let mut cfg = SandboxConfig {
        image: args
            .image
            .clone()
            .unwrap_or_else(|| crate::sandbox::DEFAULT_IMAGE.to_string()),
        runtime,
        ..Default::default()
    };
    if let Some(t) = args.timeout {
        cfg.limits.timeout = t;
    }
    if let Some(m) = args.memory {
        cfg.limits.memory = m;
    }
    if let Some(c) = args.cpus {
        cfg.limits.cpus = c;
    }
    if let Some(p) = args.pids {
        cfg.limits.pids = p;
    }
    cfg
}

/// The built-in policy's static check of `run --code`: the verdict when
/// the code may run, else `Err` with how the command ends (printed in the
/// chosen format).
fn check_builtin(
    policy: &Policy,
    code: &str,
    format: Format,
) -> Result<crate::policy::Verdict, Status> {
    let verdict = crate::policy::check_code(policy, code);
    if verdict.decision == crate::policy::Decision::Allow {
        return Ok(verdict);
    }
    Err(print_refusal(verdict, format))
}

/// Prints the built-in policy's refusal of `verdict` in the chosen format;
/// how the command ends.
fn print_refusal(verdict: crate::policy::Verdict, format: Format) -> Status {
    if format == Format::Json {
        let v = serde_json::json!({"status": "not_run", "policy": "built-in default", "verdict": verdict});
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("verdict serializes")
        );
    } else {
        eprint!(
            "the built-in policy did not let this code run (pass --policy FILE to use another):\n{}",
            crate::policy::cli::render_text(&verdict)
        );
    }
    match verdict.decision {
        crate::policy::Decision::Escalate => Status::NeedsApproval,
        _ => Status::Failed,
    }
}

/// Prints an outcome in the format `run` was asked for.
fn print_outcome(outcome: &Outcome, args: &RunArgs) {
    match args.format {
        Format::Json => {
            let mut v = serde_json::to_value(outcome).expect("outcome serializes");
            if args.unchecked {
                v = unchecked::mark(v);
            }
            println!(
                "{}",
                serde_json::to_string_pretty(&v).expect("outcome serializes")
            )
        }
        Format::Text | Format::Markdown => print!("{}", super::outcome_text(outcome)),
    }
}
