//! `compute-bot action`: the GitHub Action entry point.
//!
//! Order of a run (each step only when the previous one says go on):
//!
//! 1. Mask the secrets (`::add-mask::`), read the Actions environment and the
//!    event. Other events, and comments without the command, end here
//!    (exit 0, a notice, nothing posted).
//! 2. Load the policy (`policy` input, else `.github/compute-bot.yml` or
//!    `.github/compute-policy.yml` when present, else the built-in default).
//! 3. Authorize with [`Policy::authorize`], the policy's one decision: bots
//!    and edited comments are ignored (before any API call) unless the policy
//!    allows them; then the commenter's permission (raw
//!    collaborator-permission endpoint) is compared with the policy's `who`
//!    (or `escalation` for `approve` / `deny`). Refused users get a short
//!    reply and a 👎; nothing is generated or run.
//! 4. 👀 on the comment; one tracking comment per workflow run (hidden run
//!    marker, run link), edited through the stages and finally replaced by
//!    the result; then 🚀 (ok, and only when the result is in the thread) or
//!    😕 (failed, or nothing could be posted).
//! 5. In [`crate::github::request`]: inputs from the workspace
//!    ([`crate::github::inputs`]), the model from the `provider` / `model` /
//!    `base_url` / `api_key` inputs and the environment, then
//!    [`crate::agent::Agent::answer`] in the real sandbox.
//! 6. Outputs (`status`, `result`, `comment_id`, `code_sha256`,
//!    `report_path`), the step summary, the sandbox's stdout/stderr echoed
//!    between `::stop-commands::` markers.
//!
//! # Exit status
//!
//! One [`Status`] decides the `status` output and the exit
//! ([`Status::exit_code`]); [`crate::github::thread::conclude`] decides it
//! from the final state. The table is in docs/github-action.md ("Exit
//! status"), held against the enum by a test.
//!
//! # Approval
//!
//! A `needs_approval` result shows the code, its sha256 and the findings
//! (the pending marker of [`texts::approval_block`]) plus a hidden request
//! marker with the goal and the inputs (paths and sha256). An approval
//! (`/compute approve`, optionally followed by a sha256 prefix) by someone
//! the policy's `escalation` allows reads the code back from the newest open
//! pending comment written by a bot account, checks the hash
//! ([`texts::read_pending`]) and the prefix when one is given, marks that
//! comment closed (so a second approval cannot run it again), checks that
//! the inputs still have the hashes shown, and runs exactly that code with
//! [`crate::agent::Request::approved_sha256`] set: the escalation is
//! settled, a `deny` verdict (say, from a stricter policy since) still
//! denies. `/compute deny` closes the request.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::github::actions_io::{self, Outputs};
use crate::github::approval::{approve, deny};
use crate::github::client::{GitHub, Reaction};
use crate::github::command::{Command, Subcommand};
use crate::github::event::{ActionEnv, Trigger};
use crate::github::flow::{self, Screened};
use crate::github::followup::find_parent;
use crate::github::plan::{plan, run_plan};
use crate::github::request::{Job, execute, execute_ahead, prepare_ahead};
use crate::github::texts;
use crate::github::thread::{Ctx, Published, Stop, Thread, conclude, end_quietly, log_annotation};
use crate::policy::{
    Act, Authorization, Permission, PermissionCheck, Policy, PolicyError, Refusal,
};
use crate::sandbox::{RUNTIME_VARIABLE, Runtime, Session};
use crate::status::{Exit, Status};

/// Policy files looked for (in this order) when the `policy` input is empty.
pub(crate) const DEFAULT_POLICY_PATHS: [&str; 2] =
    [".github/compute-bot.yml", ".github/compute-policy.yml"];

/// Runs the action from the process environment; returns how it ended.
/// (SIGINT / SIGTERM are [`crate::cli::main`]'s: dropping this future
/// removes the sandbox containers.)
pub(crate) async fn run_from_process_env(session: &Session) -> Exit {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    run(&vars, session).await
}

// ------------------------------------------------------------ workflow log

/// Says in the workflow log that the run was interrupted (the job was
/// cancelled); its containers are removed by then.
pub(crate) fn log_interrupted() {
    log_annotation(
        "error",
        "compute-bot was interrupted (the job was cancelled); its sandbox containers are removed",
    );
}

/// Masks every secret the run can see before anything else is printed.
fn mask_secrets(vars: &BTreeMap<String, String>) {
    let mut out = std::io::stdout().lock();
    let inputs = [
        "INPUT_GITHUB_TOKEN",
        "INPUT_API_KEY",
        "INPUT_FALLBACK_API_KEY",
        "GITHUB_TOKEN",
    ];
    for name in inputs.into_iter().chain(crate::model::key_variables()) {
        if let Some(v) = vars.get(name).filter(|v| !v.trim().is_empty()) {
            let _ = actions_io::add_mask(&mut out, v);
        }
    }
    let _ = out.flush();
}

/// Best effort when the environment itself is broken: the outputs and
/// summary files may still be named.
fn conclude_raw(vars: &BTreeMap<String, String>, message: &str) -> Exit {
    log_annotation("error", message);
    let get = |n: &str| {
        vars.get(n)
            .filter(|v| !v.trim().is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = get("GITHUB_OUTPUT") {
        let outputs = Outputs {
            status: Status::Error.as_str().into(),
            ..Outputs::default()
        };
        let _ = actions_io::write_outputs(&p, &outputs.pairs());
    }
    if let Some(p) = get("GITHUB_STEP_SUMMARY") {
        let _ = actions_io::append_summary(&p, &texts::could_not_start(message));
    }
    Exit::action(Status::Error)
}

// ------------------------------------------------------------ entry

/// Runs the action with the variables in `vars` (the process environment in
/// production); returns how it ended. Workflow commands go to stdout.
async fn run(vars: &BTreeMap<String, String>, session: &Session) -> Exit {
    mask_secrets(vars);
    let env = match ActionEnv::from_map(vars) {
        Ok(e) => e,
        Err(e) => return conclude_raw(vars, &format!("compute-bot: {e}")),
    };
    let trigger = match Trigger::from_env(&env) {
        Ok(t) => t,
        Err(e) => return config_error(&env, &e.to_string()),
    };
    let prefix = env.inputs.command.clone();
    // Cheap exits first: a broken policy must not turn every comment red.
    let command = match flow::screen(&trigger, &prefix) {
        Screened::Ignore(reason) => return ignore(&env, &reason),
        Screened::Workflow => None,
        Screened::Comment { command, author } => Some((command, author)),
    };
    let policy = match load_policy(&env) {
        Ok(p) => p,
        Err(e) => return policy_error(&env, &e),
    };
    // What the event shows (a bot, an edit) is decided before any API call.
    let command = match command {
        None => None,
        Some((command, author)) => match policy.authorize(&author, act(&command)) {
            Authorization::Ignore(why) => return ignore(&env, &why.to_string()),
            Authorization::NeedsPermission(check) => Some((command, check)),
        },
    };
    let runtime = match Runtime::resolve(
        None,
        policy.sandbox.runtime,
        vars.get(RUNTIME_VARIABLE).map(String::as_str),
    ) {
        Ok(r) => r,
        Err(e) => return config_error(&env, &e),
    };
    let token = match env.token() {
        Ok(t) => t.clone(),
        Err(e) => return config_error(&env, &e.to_string()),
    };
    let repo = match &trigger {
        Trigger::Comment { repo, .. } => repo.clone(),
        _ => env.repository.clone(),
    };
    let gh = match GitHub::new(&env.api_url, &token, repo) {
        // `bot_login`: the App's bot login for an App installation token.
        Ok(gh) => match vars.get("INPUT_BOT_LOGIN").map(|l| l.trim()) {
            Some(login) if !login.is_empty() => gh.with_bot_login(login),
            _ => gh,
        },
        Err(e) => return config_error(&env, &e.to_string()),
    };
    // GitHub's next-page links may name the repository by its id.
    let gh = match vars.get("GITHUB_REPOSITORY_ID").map(|i| i.trim().parse()) {
        Some(Ok(id)) if gh.repo_ref() == &env.repository => gh.with_repo_id(id),
        _ => gh,
    };
    let fetched = crate::github::sources::Cache::default();
    let ctx = Ctx {
        env: &env,
        vars,
        policy: &policy,
        gh: &gh,
        prefix: &prefix,
        runtime,
        session,
        fetched: &fetched,
    };
    match (trigger, command) {
        (
            Trigger::Comment {
                issue_number,
                comment_id,
                ..
            },
            Some((command, check)),
        ) => {
            let mut thread = Thread::new(&gh, Some(issue_number), Some(comment_id));
            let end = on_comment(&ctx, &mut thread, issue_number, command, check).await;
            conclude(&ctx, thread, end).await
        }
        (
            Trigger::Dispatch {
                goal,
                code,
                inputs,
                issue,
            }
            | Trigger::Schedule {
                goal,
                code,
                inputs,
                issue,
            },
            _,
        ) => {
            let job = Job {
                goal,
                code,
                inputs,
                ..Job::default()
            };
            let mut thread = Thread::new(&gh, issue, None);
            let end = execute(&ctx, &mut thread, job).await;
            conclude(&ctx, thread, end).await
        }
        (Trigger::Watches { names }, _) => super::watch::run_watches(&ctx, &names).await,
        (Trigger::PullRequest { number }, _) => super::watch::on_pull_request(&ctx, number).await,
        (_, _) => ignore(&env, "nothing to do"),
    }
}

fn ignore(env: &ActionEnv, reason: &str) -> Exit {
    log_annotation("notice", &texts::ignored(reason));
    end_quietly(env, Status::Ignored, None)
}

fn config_error(env: &ActionEnv, message: &str) -> Exit {
    log_annotation("error", &format!("compute-bot: {message}"));
    end_quietly(env, Status::Error, Some(&texts::could_not_start(message)))
}

fn policy_error(env: &ActionEnv, e: &PolicyError) -> Exit {
    let file = Path::new(&e.file)
        .strip_prefix(&env.workspace)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| e.file.clone());
    let shown = PolicyError {
        file: file.clone(),
        ..e.clone()
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{}",
        actions_io::file_error_annotation(&shown, "compute-bot policy")
    );
    let _ = out.flush();
    drop(out);
    end_quietly(
        env,
        Status::Error,
        Some(&texts::policy_unusable(&shown.to_string(), &file)),
    )
}

/// Loads the policy named by the `policy` input (relative to the workspace),
/// else the first of [`DEFAULT_POLICY_PATHS`] that exists, else the default.
fn load_policy(env: &ActionEnv) -> Result<Policy, PolicyError> {
    let (path, shown) = match &env.inputs.policy {
        Some(p) => {
            let given = Path::new(p.trim());
            let full = if given.is_absolute() {
                given.to_path_buf()
            } else {
                env.workspace.join(given)
            };
            (full, p.trim().to_string())
        }
        None => match DEFAULT_POLICY_PATHS
            .iter()
            .map(|p| (env.workspace.join(p), p.to_string()))
            .find(|(full, _)| full.is_file())
        {
            Some(found) => found,
            None => {
                tracing::info!("no policy file; using the built-in default policy");
                return Ok(Policy::default());
            }
        },
    };
    let mut p = Policy::load(&path)?;
    p.origin = Some(PathBuf::from(shown));
    Ok(p)
}

// ------------------------------------------------------------ comments

/// What a command asks for, in the policy's terms: whoever may run code may
/// replay a result.
fn act(command: &Command) -> Act {
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
async fn on_comment(
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
    let early = early_job(&command);
    let (has, ahead) = tokio::join!(ctx.gh.permission(author), async {
        match &early {
            Some(job) => prepare_ahead(ctx, job).await,
            None => None,
        }
    });
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
    let inputs = command.inputs();
    let planning = matches!(command, Command::Plan { .. });
    match command {
        Command::Run {
            options,
            goal,
            context,
            code,
        }
        | Command::Plan {
            options,
            goal,
            context,
            code,
        } => {
            let code = code.filter(|c| !c.trim().is_empty());
            if goal.trim().is_empty() && code.is_none() {
                return Ok(Published::reply(
                    Status::Ignored,
                    &texts::usage(ctx.prefix),
                    Reaction::Confused,
                ));
            }
            let unknown: Vec<&str> = options
                .keys()
                .filter(|k| *k != "inputs")
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
            // A follow-up links or quotes the answer it builds on.
            let text = format!("{goal}\n{context}");
            let job = Job {
                goal: Some(goal).filter(|g| !g.trim().is_empty()),
                code,
                context: Some(context).filter(|c| !c.trim().is_empty()),
                inputs,
                parent: find_parent(ctx, issue, &text).await,
                ..Job::default()
            };
            if planning {
                plan(ctx, thread, job).await
            } else {
                execute_ahead(ctx, thread, job, ahead).await
            }
        }
        Command::RunPlan { sha256_prefix } => {
            run_plan(ctx, thread, issue, author, sha256_prefix.as_deref()).await
        }
        Command::Approve { sha256_prefix } => {
            approve(ctx, thread, issue, author, sha256_prefix.as_deref()).await
        }
        Command::Deny => deny(ctx, issue, author).await,
        Command::Replay { fresh } => super::replay::replay_in_thread(ctx, issue, fresh).await,
        Command::Watch { name } => super::watch::watch_file_in_thread(ctx, issue, &name).await,
        Command::Malformed { subcommand, given } => Ok(Published::reply(
            Status::Ignored,
            &texts::malformed_subcommand(subcommand, &given, ctx.prefix),
            Reaction::Confused,
        )),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Actor;

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
