//! `compute-bot run --code` (sandbox only) for code with two or more `# %%`
//! cells (an `.ipynb`'s code cells, or percent text): the cells run as the
//! steps of one session in one container and one interpreter, each with its
//! own output; every cell passes the built-in policy's check first, and a
//! cell that fails stops the run (the later cells do not run).

use std::path::Path;

use crate::notebook::cells::CodeCell;
use crate::policy::{Decision, Policy, Verdict, check_code};
use crate::sandbox::{
    Executor, Job, Outcome, RunStatus, SandboxConfig, SandboxError, StepOptions, Then,
};
use crate::status::Status;

use super::{Format, RunArgs};

/// The first refused cell of `cells` (the findings' lines are the whole
/// program's), printed as `run` prints a refusal; `Ok` when all may run.
pub(super) fn check_cells(policy: &Policy, code: &str, cells: &[CodeCell]) -> Result<(), Verdict> {
    for c in cells {
        let verdict = check_code(policy, &c.code);
        if verdict.decision != Decision::Allow {
            let first = crate::agent::first_line(code, c) as u32;
            let mut v = verdict;
            for f in &mut v.findings {
                f.line += first - 1;
            }
            return Err(v);
        }
    }
    Ok(())
}

/// Runs the cells as steps; every step's outcome, in order (the last one
/// is the step that failed or the final cell's).
pub(super) async fn run_steps(
    executor: &dyn Executor,
    cfg: &SandboxConfig,
    job: &Job,
    cells: &[CodeCell],
) -> Result<Vec<Outcome>, SandboxError> {
    let options = |i: usize| StepOptions {
        last: i + 1 == cells.len(),
        timeout: cfg.limits.timeout,
        then: Then::Next,
    };
    let first = Job {
        code: cells[0].code.clone(),
        ..job.clone()
    };
    let (outcome, mut steps) = executor
        .prepare(cfg.clone())
        .await?
        .begin(&first, options(0))
        .await?;
    let mut outcomes = vec![outcome];
    for (i, cell) in cells.iter().enumerate().skip(1) {
        let done = outcomes.last().is_some_and(|o| o.status != RunStatus::Ok);
        if done || steps.is_over() {
            break;
        }
        match steps.step(&cell.code, options(i)).await {
            Ok(o) => outcomes.push(o),
            Err(e) => {
                steps.end(outcomes.last_mut()).await;
                return Err(e);
            }
        }
    }
    steps.end(outcomes.last_mut()).await;
    Ok(outcomes)
}

/// Prints the steps: the JSON is the last step's outcome with every step's
/// outcome under `steps`; the text each step's summary under its heading.
pub(super) fn print_steps(outcomes: &[Outcome], cells: &[CodeCell], args: &RunArgs) {
    let last = outcomes.last().expect("step 1 ran");
    match args.format {
        Format::Json => {
            let mut v = serde_json::to_value(last).expect("outcome serializes");
            v["steps"] = serde_json::to_value(outcomes).expect("outcomes serialize");
            println!(
                "{}",
                serde_json::to_string_pretty(&v).expect("outcome serializes")
            );
        }
        Format::Text | Format::Markdown => {
            for (i, o) in outcomes.iter().enumerate() {
                let title = cells[i].title.as_deref().unwrap_or("");
                println!("=== step {} of {} {title}", i + 1, cells.len());
                print!("{}", super::outcome_text(o));
            }
            if outcomes.len() < cells.len() {
                println!(
                    "the later {} cell(s) did not run: step {} failed",
                    cells.len() - outcomes.len(),
                    outcomes.len()
                );
            }
        }
    }
}

/// How a run of steps ends: ok when every cell ran and the last exited 0.
pub(super) fn status_of(outcomes: &[Outcome], cells: &[CodeCell]) -> Status {
    let last = outcomes.last().expect("step 1 ran");
    if outcomes.len() == cells.len() && last.status == RunStatus::Ok {
        Status::Ok
    } else {
        Status::Failed
    }
}

/// Writes the final step's `/out` files and the session as a notebook, one
/// cell per step, into `dir`.
pub(super) fn write_steps(
    outcomes: &[Outcome],
    cells: &[CodeCell],
    code_file: &Path,
    dir: &Path,
) -> std::io::Result<()> {
    let last = outcomes.last().expect("step 1 ran");
    crate::sandbox::write_files(&last.artifacts, dir)?;
    let ran: Vec<(&str, &Outcome)> = cells
        .iter()
        .zip(outcomes)
        .map(|(c, o)| (c.code.as_str(), o))
        .collect();
    let notebook = super::files::run_notebook(&ran, Some(code_file), dir);
    crate::sandbox::write_files(std::slice::from_ref(&notebook), dir).map(|_| ())
}
