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
//! 5. In [`crate::github::execute`] (the run specification of
//!    [`crate::github::spec`]): inputs from the workspace
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
//! Comments go to the dispatcher ([`crate::github::handlers::on_comment`]);
//! `/compute approve` is [`crate::github::handlers::approve`]'s.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::github::actions::event::{ActionEnv, Trigger};
use crate::github::actions::workflow::{self, Outputs};
use crate::github::execute::execute;
use crate::github::flow::{self, Screened};
use crate::github::handlers::{act, on_comment};
use crate::github::rest::client::GitHub;
use crate::github::spec::RunSpec;
use crate::github::texts;
use crate::github::thread::{Ctx, Thread, conclude, end_quietly, log_annotation};
use crate::github::watch::pull_request;
use crate::github::watch::schedule;
use crate::policy::{Authorization, Policy, PolicyError};
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
            let _ = workflow::add_mask(&mut out, v);
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
        let _ = workflow::write_outputs(&p, &outputs.pairs());
    }
    if let Some(p) = get("GITHUB_STEP_SUMMARY") {
        let _ = workflow::append_summary(&p, &texts::could_not_start(message));
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
    let fetched = crate::github::activity::Cache::default();
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
            let spec = RunSpec::dispatched(goal, code, inputs);
            let mut thread = Thread::new(&gh, issue, None);
            let end = execute(&ctx, &mut thread, spec).await;
            conclude(&ctx, thread, end).await
        }
        (Trigger::Watches { names }, _) => schedule::run_watches(&ctx, &names).await,
        (Trigger::PullRequest { number }, _) => pull_request::on_pull_request(&ctx, number).await,
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
        workflow::file_error_annotation(&shown, "compute-bot policy")
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
