//! `/compute <goal>`: the code is generated (or taken from the comment's
//! fenced block) and run through the loop. Exact code gets its container
//! while GitHub says who asked ([`prepare_early`]).

use crate::agent::Ahead;
use crate::github::command::Command;
use crate::github::execute::{Job, execute_ahead, prepare_ahead};
use crate::github::thread::{Ctx, Published, Stop, Thread};

/// Runs the request of a `/compute` comment, in the container started for
/// its exact code when there is one.
pub(crate) async fn compute(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    job: Job,
    ahead: Option<Ahead>,
) -> Result<Published, Stop> {
    execute_ahead(ctx, thread, job, ahead).await
}

/// For a `/compute` comment with exact code: its container, started before
/// the permission check. Nothing is handed to it before the answer allows
/// the run (the code goes in at `execute`); a refusal drops it and it is
/// removed unused. `None` for every other command (plans run nothing).
pub(crate) async fn prepare_early(ctx: &Ctx<'_>, command: &Command) -> Option<Ahead> {
    match early_job(command) {
        Some(job) => prepare_ahead(ctx, &job).await,
        None => None,
    }
}

/// The job whose container may start before the permission check: a
/// `/compute` run with exact code (a fenced block), as `execute` will see
/// it; `None` for every other command (plans run nothing).
fn early_job(command: &Command) -> Option<Job> {
    match command {
        Command::Run { goal, code, .. } => Some(Job {
            goal: Some(goal.clone()).filter(|g| !g.trim().is_empty()),
            code: code.clone().filter(|c| !c.trim().is_empty()),
            ..Job::default()
        }),
        _ => None,
    }
}
