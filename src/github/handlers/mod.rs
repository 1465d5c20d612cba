//! The comment commands: one file per handler, behind one dispatcher
//! ([`on_comment`], one `match` over the command). The dispatcher hands
//! each command to its handler with its [`Asker`]; the handler first
//! finishes the policy's check with the asker's permission
//! ([`Asker::allowed`]) and builds its own run specification. A handler
//! knows the executor ([`crate::github::execute`]) and the services, never
//! another handler nor the dispatcher. Each handler's tests sit in its file
//! and snapshot the comment it posts (`tests.rs`, the in-process tester).
//!
//! - [`compute`]: `/compute <goal>`: generate (or take) the code and run it;
//! - [`plan`]: `/compute plan <goal>`: generate and check, run nothing;
//! - [`run`]: `/compute run [<sha256 prefix>]`: run exactly the newest plan;
//! - [`approve`]: `/compute approve [<sha256 prefix>]` and `/compute deny`;
//! - [`replay`]: `/compute replay [fresh]`: replay the newest result;
//! - [`watch`]: `/compute watch <name>`: the watch file for the newest result.

pub(crate) mod approve;
pub(crate) mod compute;
pub(crate) mod plan;
pub(crate) mod replay;
pub(crate) mod run;
#[cfg(test)]
pub(crate) mod tests;
pub(crate) mod watch;

use crate::github::command::{Command, Subcommand};
use crate::github::rest::comments::Reaction;
use crate::github::texts;
use crate::github::thread::{Asker, Ctx, Published, Stop, Thread};
use crate::policy::{Act, PermissionCheck};
use crate::status::Status;

/// What a command asks for, in the policy's terms: whoever may run code may
/// replay a result.
pub(crate) fn act(command: &Command) -> Act {
    match command {
        Command::Run { .. }
        | Command::Plan { .. }
        | Command::RunPlan { .. }
        | Command::Replay { .. }
        | Command::Watch { .. } => Act::Run,
        Command::Approve { .. } => Act::Approve,
        Command::Deny => Act::Deny,
        // A mistyped subcommand is answered to whoever may use it.
        Command::Malformed { subcommand, .. } => match subcommand {
            Subcommand::Approve => Act::Approve,
            Subcommand::Deny => Act::Deny,
            Subcommand::Run | Subcommand::Replay | Subcommand::Watch => Act::Run,
        },
    }
}

/// The handler of a comment the policy takes: each command goes to its
/// handler with its asker, whose permission the handler looks up first
/// ([`Asker::allowed`]; `/compute` starts the container of exact code
/// meanwhile).
pub(crate) async fn on_comment(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    issue: u64,
    command: Command,
    check: PermissionCheck<'_>,
) -> Result<Published, Stop> {
    let asker = Asker::new(check, act(&command));
    match &command {
        Command::Run(ask) => compute::compute(ctx, thread, issue, asker, ask).await,
        Command::Plan(ask) => plan::plan(ctx, thread, issue, asker, ask).await,
        Command::RunPlan { sha256_prefix } => {
            run::run_plan(ctx, thread, issue, asker, sha256_prefix.as_deref()).await
        }
        Command::Approve { sha256_prefix } => {
            approve::approve(ctx, thread, issue, asker, sha256_prefix.as_deref()).await
        }
        Command::Deny => approve::deny(ctx, issue, asker).await,
        Command::Replay { fresh } => replay::replay_in_thread(ctx, issue, asker, *fresh).await,
        Command::Watch { name } => watch::watch_file_in_thread(ctx, issue, asker, name).await,
        Command::Malformed { subcommand, given } => malformed(ctx, asker, *subcommand, given).await,
    }
}

/// The reply to a reserved subcommand followed by what it does not take:
/// what it takes (to whoever may use it); nothing is generated or run.
async fn malformed(
    ctx: &Ctx<'_>,
    asker: Asker<'_>,
    subcommand: Subcommand,
    given: &str,
) -> Result<Published, Stop> {
    if let Err(refused) = asker.allowed(ctx).await? {
        return Ok(refused);
    }
    Ok(Published::reply(
        Status::Ignored,
        &texts::malformed_subcommand(subcommand, given, ctx.prefix),
        Reaction::Confused,
    ))
}
