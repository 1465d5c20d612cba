//! The comment commands: one file per handler, behind one dispatcher
//! ([`on_comment`]). The dispatcher finishes the policy's check with the
//! asker's permission, builds the request a `/compute` or `/compute plan`
//! comment names, and hands each command to its handler; a handler knows
//! the executor ([`crate::github::execute`]) and the services, never
//! another handler.
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
pub(crate) mod tester;
pub(crate) mod watch;

use crate::github::command::{Command, Subcommand};
use crate::github::followup::find_earlier;
use crate::github::rest::comments::Reaction;
use crate::github::spec::RunSpec;
use crate::github::texts;
use crate::github::thread::{Ctx, Published, Stop, Thread, log_annotation};
use crate::policy::{Act, Permission, PermissionCheck, Refusal};
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

/// The reply to a refused request, written from the policy's reason.
fn refusal_reply(act: Act, why: &Refusal, prefix: &str) -> String {
    match (act, why) {
        (Act::Run, Refusal::NotListed { login, .. }) => texts::refused_not_listed(login, prefix),
        (
            Act::Run,
            Refusal::BelowMinimum {
                login, has, needs, ..
            },
        ) => texts::refused_permission(login, *has, *needs, prefix),
        (Act::Approve, Refusal::NotListed { login, .. }) => {
            texts::refused_not_approver(login, "approve", prefix)
        }
        (Act::Approve, Refusal::BelowMinimum { login, needs, .. }) => {
            texts::refused_approval(login, *needs, prefix)
        }
        (Act::Deny, Refusal::NotListed { login, .. }) => {
            texts::refused_not_approver(login, "deny", prefix)
        }
        (Act::Deny, Refusal::BelowMinimum { login, needs, .. }) => {
            texts::refused_deny(login, *needs, prefix)
        }
    }
}

/// The handler of a comment the policy takes: the asker's permission is
/// looked up and the policy's check finished, then the command runs.
pub(crate) async fn on_comment(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    issue: u64,
    command: Command,
    check: PermissionCheck<'_>,
) -> Result<Published, Stop> {
    let author = check.login().to_string();
    let author = author.as_str();
    // Exact code to run: its container starts while GitHub says who asked.
    // Nothing is handed to it before the answer allows the run (the code
    // goes in at `execute`); a refusal drops it and it is removed unused.
    // One run specification, built once from the command. The code it
    // names in the checkout (`code=`, or a notebook the goal mentions) is
    // read first, so its container starts early too; a problem with it is
    // answered once the asker may run code.
    let mut spec = RunSpec::from_command(&command);
    let named = match spec.as_mut() {
        Some(s) => s.take_named_code(&ctx.env.workspace, ctx.policy.session.in_steps()),
        None => Ok(()),
    };
    let (has, ahead) = tokio::join!(
        ctx.gh.permission(author),
        compute::prepare_early(ctx, spec.as_ref())
    );
    let has = match has {
        Ok(p) => p,
        // GitHub answers 404 for users who are not collaborators of a private repository.
        Err(e) if e.status() == Some(404) => Permission::None,
        Err(e) => return Err(Stop::github(texts::stop::WHO_ASKED, &e)),
    };
    if let Err(why) = check.decide(has) {
        let text = refusal_reply(act(&command), &why, ctx.prefix);
        log_annotation(
            "notice",
            &format!("compute-bot refused the request: {text}"),
        );
        return Ok(Published::reply(Status::Refused, &text, Reaction::MinusOne));
    }
    if let Err(problem) = named {
        return Err(Stop::new(
            Status::Failed,
            texts::stop::CODE_UNUSABLE,
            texts::stop::inputs_unusable(&[problem]),
        ));
    }
    if let Some(spec) = spec {
        warn_unknown_options(&command);
        return match requested(ctx, issue, spec).await {
            Ok(spec) if spec.plan_only => plan::plan(ctx, thread, spec).await,
            Ok(spec) => compute::compute(ctx, thread, spec, ahead).await,
            Err(reply) => Ok(reply),
        };
    }
    match command {
        // A run and a plan have their specification (above).
        Command::Run { .. } | Command::Plan { .. } => Ok(usage(ctx)),
        Command::RunPlan { sha256_prefix } => {
            run::run_plan(ctx, thread, issue, author, sha256_prefix.as_deref()).await
        }
        Command::Approve { sha256_prefix } => {
            approve::approve(ctx, thread, issue, author, sha256_prefix.as_deref()).await
        }
        Command::Deny => approve::deny(ctx, issue, author).await,
        Command::Replay { fresh } => replay::replay_in_thread(ctx, issue, fresh).await,
        Command::Watch { name } => watch::watch_file_in_thread(ctx, issue, &name).await,
        Command::Malformed { subcommand, given } => Ok(Published::reply(
            Status::Ignored,
            &texts::malformed_subcommand(subcommand, &given, ctx.prefix),
            Reaction::Confused,
        )),
    }
}

/// The reply to a comment that names neither a goal nor code.
fn usage(ctx: &Ctx<'_>) -> Published {
    Published::reply(
        Status::Ignored,
        &texts::usage(ctx.prefix),
        Reaction::Confused,
    )
}

/// A warning for the `key=value` options a run or a plan does not know.
fn warn_unknown_options(command: &Command) {
    let (Command::Run { options, .. } | Command::Plan { options, .. }) = command else {
        return;
    };
    let unknown: Vec<&str> = options
        .keys()
        .filter(|k| !matches!(k.as_str(), "inputs" | "code"))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        log_annotation(
            "warning",
            &format!(
                "compute-bot: unknown options ignored: {}",
                unknown.join(", ")
            ),
        );
    }
}

/// The run a `/compute` or `/compute plan` comment names, with the earlier
/// answer it builds on (a follow-up), or the usage reply when it names
/// neither a goal nor code.
async fn requested(ctx: &Ctx<'_>, issue: u64, spec: RunSpec) -> Result<RunSpec, Published> {
    if spec.goal.is_none() && spec.code.is_none() {
        return Err(usage(ctx));
    }
    // A follow-up links or quotes the answer it builds on.
    let text = format!(
        "{}\n{}",
        spec.goal.as_deref().unwrap_or_default(),
        spec.context.as_deref().unwrap_or_default()
    );
    Ok(RunSpec {
        earlier: find_earlier(ctx, issue, &text).await,
        ..spec
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::handlers::tester::{Tester, assert_answer, shipped_policy};
    use crate::policy::{Actor, Authorization, Policy};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_malformed_subcommand_is_answered_with_what_it_takes() {
        let mut t = Tester::new(&shipped_policy("default.yml"), []).await;
        let answer = t.comment("maint", "/compute approve xyz").await;
        assert_answer!(answer);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_comment_with_neither_goal_nor_code_gets_the_usage() {
        let mut t = Tester::new(&shipped_policy("default.yml"), []).await;
        let answer = t.comment("alice", "/compute").await;
        assert_answer!(answer);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_plan_with_neither_goal_nor_code_gets_the_usage() {
        let mut t = Tester::new(&shipped_policy("default.yml"), []).await;
        let answer = t.comment("alice", "/compute plan").await;
        assert_answer!(answer);
    }

    fn policy(yaml: &str) -> Policy {
        Policy::from_yaml_str(yaml, "test.yml").unwrap()
    }

    /// The policy's decision for `user` with `has`, and the reply to a refusal.
    fn authorize(
        user: &str,
        has: Permission,
        policy: &Policy,
        prefix: &str,
        act: Act,
    ) -> Result<(), String> {
        let actor = Actor {
            login: user.into(),
            is_bot: false,
            edited: false,
        };
        match policy.authorize(&actor, act) {
            Authorization::Ignore(why) => panic!("ignored: {why}"),
            Authorization::NeedsPermission(check) => check
                .decide(has)
                .map_err(|why| refusal_reply(act, &why, prefix)),
        }
    }

    #[test]
    fn a_listed_user_still_needs_the_permission_and_the_reply_says_what_is_missing() {
        let p = policy(
            "version: 1\nwho:\n  users: [Alice]\n  min_permission: write\nescalation:\n  approvers: [maint]\n",
        );
        let run = |u: &str, has| authorize(u, has, &p, "/compute", Act::Run);
        assert_eq!(run("alice", Permission::Write), Ok(()));
        assert!(
            matches!(run("alice", Permission::Read), Err(t) if t.contains("**write**") && t.contains("**read**"))
        );
        assert!(matches!(run("bob", Permission::Admin), Err(t) if t.contains("lists")));
        assert!(matches!(run("alice", Permission::None), Err(t) if t.contains("**none**")));
        let esc = |u: &str, has, k| authorize(u, has, &p, "/compute", k);
        assert_eq!(esc("MAINT", Permission::Maintain, Act::Approve), Ok(()));
        assert!(
            matches!(esc("maint", Permission::Write, Act::Approve), Err(t) if t.contains("approve") && t.contains("maintain"))
        );
        assert!(
            matches!(esc("admin", Permission::Admin, Act::Approve), Err(t) if t.contains("approvers"))
        );
        assert!(
            matches!(esc("maint", Permission::Write, Act::Deny), Err(t) if t.contains("deny") && t.contains("maintain"))
        );
        let open = policy("version: 1\n");
        assert_eq!(
            authorize("x", Permission::Admin, &open, "/c", Act::Deny),
            Ok(())
        );
        assert_eq!(
            authorize("x", Permission::Write, &open, "/c", Act::Run),
            Ok(())
        );
    }
}
