//! `compute-bot action`: the GitHub Action entry point.
//!
//! Order of a run (each step only when the previous one says go on):
//!
//! 1. Mask the secrets (`::add-mask::`), read the Actions environment and the
//!    event. Other events, and comments without the command, end here
//!    (exit 0, a notice, nothing posted).
//! 2. Load the policy (`policy` input, else `.github/compute-bot.yml` or
//!    `.github/compute-policy.yml` when present, else the built-in default).
//! 3. Authorize: bots and edited comments are ignored unless the policy
//!    allows them; the commenter's permission (raw collaborator-permission
//!    endpoint) is compared with the policy's `who` (or `escalation` for
//!    `approve` / `deny`). Refused users get a short reply and a 👎; nothing
//!    is generated or run.
//! 4. 👀 on the comment; one tracking comment per workflow run (hidden run
//!    marker, run link), edited through the stages and finally replaced by
//!    the result; then 🚀 (ok) or 😕 (failed).
//! 5. Inputs from the workspace ([`crate::github::inputs`]), the model from
//!    the `provider` / `model` / `base_url` / `api_key` inputs and the
//!    environment, then [`Agent::answer`] in the real sandbox.
//! 6. Outputs (`status`, `result`, `comment_id`, `code_sha256`,
//!    `report_path`), the step summary, the sandbox's stdout/stderr echoed
//!    between `::stop-commands::` markers.
//!
//! # Exit status
//!
//! | exit | when | `status` output |
//! |------|------|-----------------|
//! | 0 | the result is validated | `ok` |
//! | 0 | the code waits for approval (the workflow is not red while it waits) | `needs_approval` |
//! | 0 | ignored event/comment, refused user, denied request, usage reply | `ignored` / `refused` / `denied` |
//! | 1 | no valid result; unusable inputs; no model and no code; an approval that cannot be honoured | `failed` |
//! | 1 | the result could not be posted (e.g. 403: missing `permissions:`); the summary still has it | the run's status |
//! | 2 | configuration: a missing variable, a malformed event file, a bad policy file, a bad model setting, no Docker | `error` |
//!
//! # Approval
//!
//! A `needs_approval` result shows the code, its sha256 and the findings
//! (the pending marker of [`texts::approval_block`]) plus a hidden request
//! marker with the goal and the inputs (paths and sha256). `/compute approve`
//! by someone the policy's `escalation` allows reads the code back from the
//! newest open pending comment written by a bot account, checks the hash
//! ([`texts::read_pending`]), marks that comment closed (so a second
//! approval cannot run it again), checks that the inputs still have the
//! hashes shown, and runs exactly that code with
//! [`Request::approved_sha256`] set: the escalation is settled, a `deny`
//! verdict (say, from a stricter policy since) still denies. `/compute deny`
//! closes the request.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::agent::{Agent, AgentError, Request, Stage as AgentStage};
use crate::github::actions_io::{self, Outputs};
use crate::github::client::{CommentInfo, GitHub, GitHubError, Permission, Reaction};
use crate::github::command::{self, Command};
use crate::github::event::{ActionEnv, Trigger};
use crate::github::flow::{self, Decision, Screened, WhoRules};
use crate::github::inputs::{self, Resolved};
use crate::github::texts::{self, PendingCode, PendingError};
use crate::github::tracking::Tracker;
use crate::model::{ModelClient, ModelConfig, ModelOverrides, Provider};
use crate::policy::{self, Policy, PolicyError};
use crate::render::{self, RenderContext};
use crate::report::{Report, ReportStatus};
use crate::sandbox::Sandbox;

/// Exit status: done (ok, waiting for approval, ignored, refused, denied).
pub const EXIT_OK: i32 = 0;
/// Exit status: the request failed, or its result could not be posted.
pub const EXIT_FAILED: i32 = 1;
/// Exit status: configuration (environment, event file, policy, model, Docker).
pub const EXIT_CONFIG: i32 = 2;

/// Policy files looked for (in this order) when the `policy` input is empty.
pub const DEFAULT_POLICY_PATHS: [&str; 2] =
    [".github/compute-bot.yml", ".github/compute-policy.yml"];

/// Where the JSON report goes, relative to the workspace (the one directory a
/// container action shares with later steps such as `actions/upload-artifact`).
pub const REPORT_DIR: &str = "compute-bot-reports";

/// What to tell a commenter when there is a goal but no code and no model.
pub const NO_MODEL_ACTION_HELP: &str = "No language model is configured for this workflow, so no code can be generated for this goal. Either configure a model — set the action inputs `provider` (`openai` for any OpenAI-compatible endpoint, or `anthropic`), `model` and `api_key` (from a repository secret), and `base_url` if needed — or give the exact code to run in a fenced ```` ```python ```` block in the comment (or the `code` input for workflow_dispatch and schedule runs).";

/// Added to model configuration errors, whose text names the `COMPUTE_BOT_*` variables.
const MODEL_INPUTS_HINT: &str = "In the workflow, the action inputs `provider`, `model`, `base_url` and `api_key` set these (they win over the `COMPUTE_BOT_*` variables).";

const REQUEST_MARKER_START: &str = "<!-- compute-bot:request=";
const MARKER_END: &str = " -->";

/// Runs the action from the process environment; returns the exit status.
/// SIGINT / SIGTERM (a cancelled job) stop the run and remove its sandbox
/// containers.
pub async fn run_from_process_env() -> i32 {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    let work = run(&vars);
    tokio::pin!(work);
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    #[cfg(unix)]
    let terminated = async {
        match term.as_mut() {
            Some(t) => {
                t.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminated = std::future::pending::<()>();
    tokio::select! {
        code = &mut work => code,
        _ = tokio::signal::ctrl_c() => interrupted(),
        _ = terminated => interrupted(),
    }
    // Dropping `work` removes the sandbox containers still alive.
}

fn interrupted() -> i32 {
    log_annotation(
        "error",
        "compute-bot was interrupted (the job was cancelled); its sandbox containers are removed",
    );
    130
}

// ------------------------------------------------------------ workflow log

fn log_annotation(level: &str, message: &str) {
    let mut out = std::io::stdout().lock();
    let _ = actions_io::annotation(&mut out, level, message);
    let _ = out.flush();
}

fn escape_property(s: &str) -> String {
    actions_io::escape_data(s)
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// Masks every secret the run can see before anything else is printed.
fn mask_secrets(vars: &BTreeMap<String, String>) {
    let mut out = std::io::stdout().lock();
    for name in [
        "INPUT_GITHUB_TOKEN",
        "INPUT_API_KEY",
        crate::model::ENV_API_KEY,
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GITHUB_TOKEN",
    ] {
        if let Some(v) = vars.get(name).filter(|v| !v.trim().is_empty()) {
            let _ = actions_io::add_mask(&mut out, v);
        }
    }
    let _ = out.flush();
}

/// What the run ends with: outputs, summary and exit status.
#[derive(Debug, Default)]
struct Ending {
    outputs: Outputs,
    summary: Option<String>,
    exit: i32,
}

impl Ending {
    fn status(status: &str, exit: i32) -> Ending {
        Ending {
            outputs: Outputs {
                status: status.to_string(),
                ..Outputs::default()
            },
            summary: None,
            exit,
        }
    }

    fn with_summary(mut self, text: impl Into<String>) -> Ending {
        self.summary = Some(text.into());
        self
    }

    fn with_comment(mut self, id: Option<u64>) -> Ending {
        self.outputs.comment_id = id;
        self
    }
}

/// Writes the outputs and the summary (when the runner gave the files).
fn conclude(env: &ActionEnv, end: Ending) -> i32 {
    if let Some(path) = &env.output
        && let Err(e) = actions_io::write_outputs(path, &end.outputs.pairs())
    {
        log_annotation("warning", &format!("compute-bot: {e}"));
    }
    if let (Some(path), Some(text)) = (&env.step_summary, &end.summary)
        && let Err(e) = actions_io::append_summary(path, text)
    {
        log_annotation("warning", &format!("compute-bot: {e}"));
    }
    end.exit
}

/// Best effort when the environment itself is broken: the outputs and
/// summary files may still be named.
fn conclude_raw(vars: &BTreeMap<String, String>, message: &str) -> i32 {
    log_annotation("error", message);
    let get = |n: &str| {
        vars.get(n)
            .filter(|v| !v.trim().is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = get("GITHUB_OUTPUT") {
        let outputs = Outputs {
            status: "error".into(),
            ..Outputs::default()
        };
        let _ = actions_io::write_outputs(&p, &outputs.pairs());
    }
    if let Some(p) = get("GITHUB_STEP_SUMMARY") {
        let _ = actions_io::append_summary(
            &p,
            &format!(
                "### 💥 compute-bot could not start\n\n{}\n",
                render::neutralize(message)
            ),
        );
    }
    EXIT_CONFIG
}

// ------------------------------------------------------------ entry

/// Runs the action with the variables in `vars` (the process environment in
/// production); returns the exit status. Workflow commands go to stdout.
pub async fn run(vars: &BTreeMap<String, String>) -> i32 {
    mask_secrets(vars);
    let env = match ActionEnv::from_map(vars) {
        Ok(e) => e,
        Err(e) => return conclude_raw(vars, &format!("compute-bot: {e}")),
    };
    let trigger = match Trigger::from_env(&env) {
        Ok(t) => t,
        Err(e) => {
            log_annotation("error", &format!("compute-bot: {e}"));
            return conclude(
                &env,
                Ending::status("error", EXIT_CONFIG).with_summary(format!(
                    "### 💥 compute-bot could not start\n\n{}\n",
                    render::neutralize(&e.to_string())
                )),
            );
        }
    };
    let prefix = env.inputs.command.clone();
    // Cheap exits first: a broken policy must not turn every comment red.
    match &trigger {
        Trigger::Ignored { reason } => return ignore(&env, reason),
        Trigger::Comment { body, .. } if command::parse(body, &prefix).is_none() => {
            return ignore(&env, &format!("the comment does not start with `{prefix}`"));
        }
        _ => {}
    }
    let policy = match load_policy(&env) {
        Ok(p) => p,
        Err(e) => return policy_error(&env, &e),
    };
    let who = WhoRules {
        users: policy.who.users.clone(),
        min_permission: permission_of(policy.who.min_permission),
        allow_bots: policy.who.allow_bots,
        allow_edited_comments: policy.who.allow_edited_comments,
    };
    let screened = flow::screen(&trigger, &prefix, &who);
    if let Screened::Ignore(reason) = &screened {
        return ignore(&env, reason);
    }
    let token = match env.token() {
        Ok(t) => t.clone(),
        Err(e) => return config_error(&env, &e.to_string()),
    };
    let repo = match &trigger {
        Trigger::Comment { repo, .. } => repo.clone(),
        _ => env.repository.clone(),
    };
    let gh = match GitHub::new(&env.api_url, &token, repo) {
        Ok(gh) => gh,
        Err(e) => return config_error(&env, &e.to_string()),
    };
    let ctx = Ctx {
        env: &env,
        vars,
        policy: &policy,
        gh: &gh,
        prefix: &prefix,
    };
    match (trigger, screened) {
        (
            Trigger::Comment {
                issue_number,
                comment_id,
                ..
            },
            Screened::Comment { command, author },
        ) => on_comment(&ctx, issue_number, comment_id, command, &author).await,
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
                issue,
                ..Job::default()
            };
            execute(&ctx, job).await
        }
        (_, _) => ignore(&env, "nothing to do"),
    }
}

fn ignore(env: &ActionEnv, reason: &str) -> i32 {
    log_annotation("notice", &texts::ignored(reason));
    conclude(env, Ending::status("ignored", EXIT_OK))
}

fn config_error(env: &ActionEnv, message: &str) -> i32 {
    log_annotation("error", &format!("compute-bot: {message}"));
    conclude(
        env,
        Ending::status("error", EXIT_CONFIG).with_summary(format!(
            "### 💥 compute-bot could not start\n\n{}\n",
            render::neutralize(message)
        )),
    )
}

fn policy_error(env: &ActionEnv, e: &PolicyError) -> i32 {
    let file = Path::new(&e.file)
        .strip_prefix(&env.workspace)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| e.file.clone());
    let shown = PolicyError {
        file: file.clone(),
        ..e.clone()
    };
    let mut out = std::io::stdout().lock();
    let position = if e.line > 0 {
        format!(",line={},col={}", e.line, e.column.max(1))
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "::error file={}{position},title=compute-bot policy::{}",
        escape_property(&file),
        actions_io::escape_data(&shown.to_string())
    );
    let _ = out.flush();
    drop(out);
    conclude(
        env,
        Ending::status("error", EXIT_CONFIG).with_summary(format!(
            "### 💥 compute-bot: the policy file is not usable\n\n```text\n{}\n```\n\nNothing was posted or run. Fix the file (`compute-bot policy check {file}` shows the same message locally).\n",
            shown.to_string().replace("```", "'''")
        )),
    )
}

/// Loads the policy named by the `policy` input (relative to the workspace),
/// else the first of [`DEFAULT_POLICY_PATHS`] that exists, else the default.
pub fn load_policy(env: &ActionEnv) -> Result<Policy, PolicyError> {
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

fn permission_of(p: policy::Permission) -> Permission {
    match p {
        policy::Permission::Read => Permission::Read,
        policy::Permission::Triage => Permission::Triage,
        policy::Permission::Write => Permission::Write,
        policy::Permission::Maintain => Permission::Maintain,
        policy::Permission::Admin => Permission::Admin,
    }
}

// ------------------------------------------------------------ comments

struct Ctx<'a> {
    env: &'a ActionEnv,
    vars: &'a BTreeMap<String, String>,
    policy: &'a Policy,
    gh: &'a GitHub,
    prefix: &'a str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Run,
    Approve,
    Deny,
}

/// Whether `user` may do `kind`. A non-empty list (`who.users`,
/// `escalation.approvers`) is an allowlist that replaces the permission rule
/// (as the policy file documents); otherwise the permission must reach the
/// minimum.
fn authorize(
    user: &str,
    has: Option<Permission>,
    listed: &[String],
    min: policy::Permission,
    prefix: &str,
    kind: Kind,
) -> Decision {
    if !listed.is_empty() {
        if listed.iter().any(|u| u.eq_ignore_ascii_case(user)) {
            return Decision::Proceed;
        }
        return Decision::Refuse(match kind {
            Kind::Run => texts::refused_not_listed(user, prefix),
            Kind::Approve => texts::refused_not_approver(user, "approve", prefix),
            Kind::Deny => texts::refused_not_approver(user, "deny", prefix),
        });
    }
    let has = has.unwrap_or(Permission::None);
    let rules = WhoRules {
        users: Vec::new(),
        min_permission: permission_of(min),
        ..WhoRules::default()
    };
    match kind {
        Kind::Run => flow::decide(user, has, &rules, prefix, false),
        Kind::Approve => flow::decide(user, has, &rules, prefix, true),
        Kind::Deny => {
            if has >= rules.min_permission {
                Decision::Proceed
            } else {
                Decision::Refuse(texts::refused_deny(user, rules.min_permission, prefix))
            }
        }
    }
}

async fn on_comment(
    ctx: &Ctx<'_>,
    issue: u64,
    comment_id: u64,
    command: Command,
    author: &str,
) -> i32 {
    let (kind, listed, min) = match &command {
        Command::Run { .. } => (
            Kind::Run,
            &ctx.policy.who.users,
            ctx.policy.who.min_permission,
        ),
        Command::Approve => (
            Kind::Approve,
            &ctx.policy.escalation.approvers,
            ctx.policy.escalation.min_permission,
        ),
        Command::Deny => (
            Kind::Deny,
            &ctx.policy.escalation.approvers,
            ctx.policy.escalation.min_permission,
        ),
    };
    // The permission only matters when no allowlist is set.
    let has = if listed.is_empty() {
        match ctx.gh.permission(author).await {
            Ok(p) => Some(p),
            // GitHub answers 404 for users who are not collaborators of a private repository.
            Err(e) if e.status() == Some(404) => Some(Permission::None),
            Err(e) => {
                log_annotation("error", &format!("compute-bot: {e}"));
                return conclude(
                    ctx.env,
                    Ending::status("error", EXIT_FAILED).with_summary(format!(
                        "### 💥 compute-bot could not check who asked\n\n{}\n",
                        render::neutralize(&e.to_string())
                    )),
                );
            }
        }
    } else {
        None
    };
    if let Decision::Refuse(text) = authorize(author, has, listed, min, ctx.prefix, kind) {
        return refuse(ctx, issue, comment_id, &text).await;
    }
    match command {
        Command::Run {
            options,
            goal,
            context,
            code,
        } => {
            let code = code.filter(|c| !c.trim().is_empty());
            if goal.trim().is_empty() && code.is_none() {
                return reply(
                    ctx,
                    issue,
                    comment_id,
                    &texts::usage(ctx.prefix),
                    Reaction::Confused,
                    "ignored",
                    EXIT_OK,
                )
                .await;
            }
            let unknown: Vec<&String> = options.keys().filter(|k| *k != "inputs").collect();
            if !unknown.is_empty() {
                log_annotation(
                    "warning",
                    &format!(
                        "compute-bot: unknown options ignored: {}",
                        unknown
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            let inputs = options
                .get("inputs")
                .map(|v| crate::github::event::split_list(v))
                .unwrap_or_default();
            let job = Job {
                goal: Some(goal).filter(|g| !g.trim().is_empty()),
                code,
                context: Some(context).filter(|c| !c.trim().is_empty()),
                inputs,
                issue: Some(issue),
                reply_to: Some(comment_id),
                ..Job::default()
            };
            execute(ctx, job).await
        }
        Command::Approve => approve(ctx, issue, comment_id, author).await,
        Command::Deny => deny(ctx, issue, comment_id, author).await,
    }
}

/// A refused command: a short reply, a 👎, nothing run.
async fn refuse(ctx: &Ctx<'_>, issue: u64, comment_id: u64, text: &str) -> i32 {
    log_annotation(
        "notice",
        &format!("compute-bot refused the request: {text}"),
    );
    reply(
        ctx,
        issue,
        comment_id,
        text,
        Reaction::MinusOne,
        "refused",
        EXIT_OK,
    )
    .await
}

/// Posts a short reply and a reaction; a failure to post makes the run fail.
async fn reply(
    ctx: &Ctx<'_>,
    issue: u64,
    comment_id: u64,
    text: &str,
    reaction: Reaction,
    status: &str,
    exit: i32,
) -> i32 {
    let mut errors = Vec::new();
    if let Err(e) = ctx.gh.add_reaction(comment_id, reaction).await {
        errors.push(e);
    }
    let id = match ctx.gh.create_comment(issue, text).await {
        Ok(id) => Some(id),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let mut summary = format!("### compute-bot\n\n{}\n", text.trim());
    let exit = report_post_errors(&errors, &mut summary, exit);
    conclude(
        ctx.env,
        Ending::status(status, exit)
            .with_summary(summary)
            .with_comment(id),
    )
}

/// Logs GitHub errors as annotations and notes them in the summary; any
/// error makes the exit status [`EXIT_FAILED`].
fn report_post_errors(errors: &[GitHubError], summary: &mut String, exit: i32) -> i32 {
    if errors.is_empty() {
        return exit;
    }
    let mut note = String::from(
        "> [!CAUTION]\n> compute-bot could not post to GitHub, so the thread does not show this:\n",
    );
    for e in errors {
        log_annotation("error", &format!("compute-bot: {e}"));
        note.push_str(&format!("> - {}\n", render::neutralize(&e.to_string())));
    }
    note.push('\n');
    summary.insert_str(0, &note);
    if exit == EXIT_OK {
        EXIT_FAILED
    } else {
        exit.max(EXIT_FAILED)
    }
}

// ------------------------------------------------------------ approval

/// What a needs-approval comment records besides the code, so that the
/// approved run gets the same goal and the same inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRequest {
    /// The goal.
    pub goal: Option<String>,
    /// Extra context.
    pub context: Option<String>,
    /// Workspace inputs with the hashes the approver was shown.
    pub inputs: Vec<PendingInput>,
}

/// One input of a pending request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingInput {
    /// Workspace-relative path.
    pub path: String,
    /// Hex SHA-256 of the contents when the code was shown.
    pub sha256: String,
}

/// The hidden marker that records a [`PendingRequest`] (hex-encoded JSON, so
/// no text in it can end the HTML comment).
pub fn request_marker(req: &PendingRequest) -> String {
    let json = serde_json::to_vec(req).unwrap_or_default();
    format!("{REQUEST_MARKER_START}{}{MARKER_END}", hex::encode(json))
}

/// Reads the [`PendingRequest`] back from a comment, if it has one.
pub fn read_request_marker(body: &str) -> Option<PendingRequest> {
    let start = body.find(REQUEST_MARKER_START)? + REQUEST_MARKER_START.len();
    let rest = &body[start..];
    let end = rest.find(MARKER_END)?;
    let bytes = hex::decode(rest[..end].trim()).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The newest comment written by a bot account that carries an open pending
/// marker, with the code read back from it (or why it cannot be used).
async fn find_pending(
    gh: &GitHub,
    issue: u64,
) -> Result<Option<(CommentInfo, Result<PendingCode, PendingError>)>, GitHubError> {
    let comments = gh.list_comments(issue).await?;
    for c in comments.into_iter().rev().filter(|c| c.author_is_bot) {
        match texts::read_pending(&c.body) {
            Err(PendingError::NoMarker) | Err(PendingError::Closed) => continue,
            r => return Ok(Some((c, r))),
        }
    }
    Ok(None)
}

async fn approve(ctx: &Ctx<'_>, issue: u64, comment_id: u64, author: &str) -> i32 {
    let pending = match find_pending(ctx.gh, issue).await {
        Ok(p) => p,
        Err(e) => {
            let mut summary = String::from("### compute-bot could not read the thread\n");
            let exit = report_post_errors(&[e], &mut summary, EXIT_FAILED);
            return conclude(ctx.env, Ending::status("error", exit).with_summary(summary));
        }
    };
    let (comment, code) = match pending {
        None => {
            return reply(
                ctx,
                issue,
                comment_id,
                &texts::nothing_pending(author, ctx.prefix),
                Reaction::Confused,
                "ignored",
                EXIT_OK,
            )
            .await;
        }
        Some((_, Err(e))) => {
            return reply(
                ctx,
                issue,
                comment_id,
                &texts::approval_invalid(&e.to_string()),
                Reaction::Confused,
                "failed",
                EXIT_FAILED,
            )
            .await;
        }
        Some((c, Ok(code))) => (c, code),
    };
    let request = read_request_marker(&comment.body).unwrap_or_default();
    // Close the request before running, so a second approval cannot run it again.
    let closed = format!(
        "{}{}",
        comment.body,
        texts::approved_by(author, &code.sha256)
    );
    if let Err(e) = ctx.gh.update_comment(comment.id, &closed).await {
        let mut summary = String::from("### compute-bot could not close the approved request\n");
        let exit = report_post_errors(&[e], &mut summary, EXIT_FAILED);
        return conclude(ctx.env, Ending::status("error", exit).with_summary(summary));
    }
    let job = Job {
        goal: request.goal,
        code: Some(code.code),
        context: request.context,
        inputs: request.inputs.iter().map(|i| i.path.clone()).collect(),
        expected_inputs: Some(request.inputs),
        issue: Some(issue),
        reply_to: Some(comment_id),
        approval: Some(Approval {
            by: author.to_string(),
            sha256: code.sha256,
            request_url: comment.html_url,
        }),
    };
    execute(ctx, job).await
}

async fn deny(ctx: &Ctx<'_>, issue: u64, comment_id: u64, author: &str) -> i32 {
    let pending = match find_pending(ctx.gh, issue).await {
        Ok(p) => p,
        Err(e) => {
            let mut summary = String::from("### compute-bot could not read the thread\n");
            let exit = report_post_errors(&[e], &mut summary, EXIT_FAILED);
            return conclude(ctx.env, Ending::status("error", exit).with_summary(summary));
        }
    };
    let Some((comment, _)) = pending else {
        return reply(
            ctx,
            issue,
            comment_id,
            &texts::nothing_pending(author, ctx.prefix),
            Reaction::Confused,
            "ignored",
            EXIT_OK,
        )
        .await;
    };
    let mut errors = Vec::new();
    let closed = format!("{}{}", comment.body, texts::denied(author));
    if let Err(e) = ctx.gh.update_comment(comment.id, &closed).await {
        errors.push(e);
    }
    if let Err(e) = ctx.gh.add_reaction(comment_id, Reaction::PlusOne).await {
        errors.push(e);
    }
    let mut summary = format!(
        "### compute-bot: request denied\n\n@{author} denied the code waiting for approval; nothing was run.\n"
    );
    let exit = report_post_errors(&errors, &mut summary, EXIT_OK);
    conclude(
        ctx.env,
        Ending::status("denied", exit)
            .with_summary(summary)
            .with_comment(Some(comment.id)),
    )
}

// ------------------------------------------------------------ one request

#[derive(Debug, Default)]
struct Approval {
    by: String,
    sha256: String,
    request_url: String,
}

#[derive(Debug, Default)]
struct Job {
    goal: Option<String>,
    code: Option<String>,
    context: Option<String>,
    /// Paths named on purpose.
    inputs: Vec<String>,
    /// For an approved run: the inputs (and hashes) the approver saw; no
    /// paths are taken from the goal then.
    expected_inputs: Option<Vec<PendingInput>>,
    /// Where to post (none: the summary only).
    issue: Option<u64>,
    /// The comment that asked (reactions go there).
    reply_to: Option<u64>,
    approval: Option<Approval>,
}

/// The tracking comment, reactions and errors of one request.
struct Thread<'a> {
    gh: &'a GitHub,
    tracker: Option<Tracker<'a>>,
    reply_to: Option<u64>,
    errors: Vec<GitHubError>,
    marker: String,
    run_url: String,
}

impl<'a> Thread<'a> {
    async fn react(&mut self, reaction: Reaction) {
        if let Some(id) = self.reply_to
            && let Err(e) = self.gh.add_reaction(id, reaction).await
        {
            self.errors.push(e);
        }
    }

    async fn finish(&mut self, body: &str) {
        if let Some(t) = self.tracker.as_mut()
            && let Err(e) = t.finish(body).await
        {
            self.errors.push(e);
        }
    }

    fn comment_id(&self) -> Option<u64> {
        self.tracker.as_ref().and_then(|t| t.comment_id())
    }

    /// Ends the request before anything ran: the reason in the comment and the summary.
    async fn stop(self, ctx: &Ctx<'_>, title: &str, details: &str, status: &str, exit: i32) -> i32 {
        let mut this = self;
        log_annotation("error", &format!("compute-bot: {title}: {details}"));
        let text = format!(
            "### ❌ compute-bot: {title}\n\n{details}\n\nNothing was run.\n\n<sub>[Workflow run]({})</sub>\n",
            this.run_url
        );
        this.finish(&format!("{}\n{text}", this.marker)).await;
        this.react(Reaction::Confused).await;
        let mut summary = text;
        let exit = report_post_errors(&this.errors, &mut summary, exit);
        conclude(
            ctx.env,
            Ending::status(status, exit)
                .with_summary(summary)
                .with_comment(this.comment_id()),
        )
    }
}

fn model_overrides(env: &ActionEnv) -> Result<ModelOverrides, String> {
    let i = &env.inputs;
    let provider = match &i.provider {
        None => None,
        Some(p) => Some(p.parse::<Provider>().map_err(|e| {
            format!("the action input `provider` is `{p}`: {e}; use `openai` or `anthropic`")
        })?),
    };
    Ok(ModelOverrides {
        provider,
        base_url: i.base_url.clone(),
        model: i.model.clone(),
        api_key: i
            .api_key
            .as_ref()
            .map(|k| crate::model::Secret::new(k.expose())),
        ..ModelOverrides::default()
    })
}

fn map_stage(s: AgentStage, max_attempts: u32) -> Option<(texts::Stage, u32, u32)> {
    match s {
        AgentStage::Generating { attempt, of } => Some((texts::Stage::Generating, attempt, of)),
        AgentStage::Checking { attempt } => Some((texts::Stage::Checking, attempt, max_attempts)),
        AgentStage::Running { attempt } => Some((texts::Stage::Running, attempt, max_attempts)),
        AgentStage::Validating { attempt } => {
            Some((texts::Stage::Validating, attempt, max_attempts))
        }
        AgentStage::Explaining => None,
    }
}

fn problems_md(problems: &[inputs::InputProblem]) -> String {
    problems
        .iter()
        .map(|p| {
            format!(
                "- `{}` {}",
                p.path.replace('`', "'"),
                render::neutralize(&p.problem)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes the full report as JSON under the workspace ([`REPORT_DIR`]);
/// returns the path relative to the workspace (falls back to an absolute
/// path in the temp directory when the workspace is not writable).
fn write_report(env: &ActionEnv, report: &Report) -> Option<String> {
    let json = match serde_json::to_string_pretty(report) {
        Ok(j) => j,
        Err(e) => {
            tracing::warn!("cannot serialize the report: {e}");
            return None;
        }
    };
    let run: String = env
        .run_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let name = format!("report-{run}-{}.json", env.run_attempt);
    let dir = env.workspace.join(REPORT_DIR);
    let in_workspace = std::fs::create_dir_all(&dir)
        .and_then(|_| {
            let ignore = dir.join(".gitignore");
            if !ignore.exists() {
                std::fs::write(&ignore, "*\n")?;
            }
            std::fs::write(dir.join(&name), &json)
        })
        .map(|_| format!("{REPORT_DIR}/{name}"));
    match in_workspace {
        Ok(rel) => Some(rel),
        Err(e) => {
            let tmp = std::env::temp_dir().join(format!("compute-bot-{name}"));
            tracing::warn!(
                "cannot write the report into the workspace ({e}); writing {}",
                tmp.display()
            );
            std::fs::write(&tmp, &json)
                .ok()
                .map(|_| tmp.display().to_string())
        }
    }
}

fn status_name(s: ReportStatus) -> &'static str {
    match s {
        ReportStatus::Ok => "ok",
        ReportStatus::Failed => "failed",
        ReportStatus::NeedsApproval => "needs_approval",
    }
}

/// Runs one request: acknowledge, inputs, model, agent, post, outputs.
async fn execute(ctx: &Ctx<'_>, job: Job) -> i32 {
    let env = ctx.env;
    let marker = texts::run_marker(&env.run_id);
    let run_url = env.run_url();
    let mut thread = Thread {
        gh: ctx.gh,
        tracker: job
            .issue
            .map(|i| Tracker::new(ctx.gh, i, marker.clone(), Some(run_url.clone()))),
        reply_to: job.reply_to,
        errors: Vec::new(),
        marker: marker.clone(),
        run_url: run_url.clone(),
    };
    thread.react(Reaction::Eyes).await;
    let mut show_progress = thread.tracker.is_some();
    if let Some(t) = thread.tracker.as_mut()
        && let Err(e) = t.acknowledge().await
    {
        // Go on: the result still reaches the summary; posting is retried at the end.
        tracing::warn!("cannot post the tracking comment: {e}");
        thread.errors.push(e);
        show_progress = false;
    }

    // Inputs.
    let mention_text = match &job.expected_inputs {
        Some(_) => String::new(),
        None => [job.goal.as_deref(), job.context.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let resolved: Vec<Resolved> = match inputs::resolve(
        &env.workspace,
        &job.inputs,
        &mention_text,
        &ctx.policy.inputs,
    ) {
        Ok(r) => r,
        Err(problems) => {
            return thread
                .stop(
                    ctx,
                    "the inputs cannot be used",
                    &problems_md(&problems),
                    "failed",
                    EXIT_FAILED,
                )
                .await;
        }
    };
    if let Some(expected) = &job.expected_inputs {
        let changed: Vec<String> = expected
            .iter()
            .filter(|e| {
                !resolved
                    .iter()
                    .any(|r| r.path == e.path && r.sha256 == e.sha256)
            })
            .map(|e| {
                format!(
                    "- `{}` changed since the code was shown",
                    e.path.replace('`', "'")
                )
            })
            .collect();
        if !changed.is_empty() {
            return thread
                .stop(
                    ctx,
                    "the approved request cannot run on the same data",
                    &format!(
                        "{}\n\nThe approval covered the code together with these inputs. Ask again with a new `{}` comment.",
                        changed.join("\n"),
                        ctx.prefix
                    ),
                    "failed",
                    EXIT_FAILED,
                )
                .await;
        }
    }

    // Model.
    let has_code = job.code.as_deref().is_some_and(|c| !c.trim().is_empty())
        || job
            .goal
            .as_deref()
            .and_then(crate::prompt::extract_fenced_code)
            .is_some_and(|c| !c.trim().is_empty());
    let model_cfg = match model_overrides(env)
        .and_then(|o| ModelConfig::from_env_with(&o, ctx.vars).map_err(|e| e.to_string()))
    {
        Ok(c) => c,
        Err(e) => {
            return thread
                .stop(
                    ctx,
                    "the model configuration is not usable",
                    &format!("{}\n\n{MODEL_INPUTS_HINT}", render::neutralize(&e)),
                    "error",
                    EXIT_CONFIG,
                )
                .await;
        }
    };
    if !has_code && model_cfg.is_none() {
        return thread
            .stop(
                ctx,
                "no model and no code",
                NO_MODEL_ACTION_HELP,
                "failed",
                EXIT_FAILED,
            )
            .await;
    }
    // A model is only used to generate and explain; exact code runs without one.
    let model = match model_cfg.map(ModelClient::new).transpose() {
        Ok(m) => m,
        Err(e) => {
            return thread
                .stop(
                    ctx,
                    "the model configuration is not usable",
                    &format!(
                        "{}\n\n{MODEL_INPUTS_HINT}",
                        render::neutralize(&e.to_string())
                    ),
                    "error",
                    EXIT_CONFIG,
                )
                .await;
        }
    };

    // Sandbox.
    let sandbox = match Sandbox::connect().await {
        Ok(s) => s,
        Err(e) => {
            return thread
                .stop(
                    ctx,
                    "the sandbox is not available",
                    &format!(
                        "{}\n\nThe action needs a Linux runner with Docker (e.g. `ubuntu-latest`).",
                        render::neutralize(&e.to_string())
                    ),
                    "error",
                    EXIT_CONFIG,
                )
                .await;
        }
    };
    if let Err(e) = sandbox.cleanup_leftovers().await {
        tracing::warn!(error = %e, "could not clean up leftover containers");
    }

    let max_attempts = if has_code {
        1
    } else {
        u32::from(ctx.policy.attempts.get())
    };
    let request = Request {
        goal: job.goal.clone(),
        code: job.code.clone(),
        inputs: resolved.iter().map(|r| r.file.clone()).collect(),
        schema: None,
        context: job.context.clone(),
        approved_sha256: job.approval.as_ref().map(|a| a.sha256.clone()),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<AgentStage>();
    let policy = ctx.policy;
    let work = async move {
        let progress = move |s: AgentStage| {
            let _ = tx.send(s);
        };
        let agent = Agent {
            policy,
            sandbox: &sandbox,
            model: model.as_ref(),
            progress: &progress,
        };
        agent.answer(request).await
    };
    let tracker = &mut thread.tracker;
    let updater = async {
        while let Some(mut stage) = rx.recv().await {
            // Coalesce: only the newest stage is shown.
            while let Ok(next) = rx.try_recv() {
                stage = next;
            }
            if !show_progress {
                continue;
            }
            if let (Some(t), Some((s, attempt, of))) =
                (tracker.as_mut(), map_stage(stage, max_attempts))
                && let Err(e) = t.stage(s, attempt, of).await
            {
                tracing::warn!("cannot show the stage in the tracking comment: {e}");
            }
        }
    };
    let (answer, ()) = tokio::join!(work, updater);
    let report = match answer {
        Ok(r) => r,
        Err(e) => {
            let (status, exit) = match e {
                AgentError::NoModel(_) | AgentError::Empty => ("failed", EXIT_FAILED),
                AgentError::Schema(_) | AgentError::Sandbox(_) => ("error", EXIT_CONFIG),
            };
            return thread
                .stop(
                    ctx,
                    "the request could not start",
                    &render::neutralize(&e.to_string()),
                    status,
                    exit,
                )
                .await;
        }
    };

    // Post.
    let report_path = write_report(env, &report);
    if let Some(o) = &report.outcome {
        let mut out = std::io::stdout().lock();
        if !o.stdout.is_empty() {
            let _ = actions_io::echo_untrusted(&mut out, "sandbox stdout", &o.stdout);
        }
        if !o.stderr.is_empty() {
            let _ = actions_io::echo_untrusted(&mut out, "sandbox stderr", &o.stderr);
        }
        let _ = out.flush();
    }
    let mut head = marker.clone();
    if let Some(a) = &job.approval {
        head.push_str(&format!(
            "\n✅ Approved by @{} ([request]({})): ran exactly the code with sha256 `{}`.\n",
            a.by, a.request_url, a.sha256
        ));
    }
    if report.status == ReportStatus::NeedsApproval {
        let pending = PendingRequest {
            goal: job.goal.clone(),
            context: job.context.clone(),
            inputs: resolved
                .iter()
                .map(|r| PendingInput {
                    path: r.path.clone(),
                    sha256: r.sha256.clone(),
                })
                .collect(),
        };
        head.push('\n');
        head.push_str(&request_marker(&pending));
    }
    let rctx = RenderContext {
        run_url: Some(run_url.clone()),
        marker: Some(head),
        command: Some(ctx.prefix.to_string()),
    };
    let body = render::markdown(&report, &rctx);
    thread.finish(&body).await;
    match report.status {
        ReportStatus::Ok => thread.react(Reaction::Rocket).await,
        ReportStatus::Failed => thread.react(Reaction::Confused).await,
        ReportStatus::NeedsApproval => {}
    }
    let mut summary = render::summary(&report, &rctx);
    let exit = match report.status {
        ReportStatus::Ok | ReportStatus::NeedsApproval => EXIT_OK,
        ReportStatus::Failed => EXIT_FAILED,
    };
    let exit = report_post_errors(&thread.errors, &mut summary, exit);
    let end = Ending {
        outputs: Outputs {
            status: status_name(report.status).to_string(),
            result: report.result.clone(),
            comment_id: thread.comment_id(),
            code_sha256: report.code_sha256.clone(),
            report_path,
        },
        summary: Some(summary),
        exit,
    };
    conclude(env, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_marker_round_trips_any_text() {
        let req = PendingRequest {
            goal: Some("mean --> of <!-- x -->".into()),
            context: None,
            inputs: vec![PendingInput {
                path: "data/a b.csv".into(),
                sha256: "ab".repeat(32),
            }],
        };
        let m = request_marker(&req);
        assert!(!m[4..m.len() - 3].contains("-->"));
        assert_eq!(
            read_request_marker(&format!("x\n{m}\ny")).as_ref(),
            Some(&req)
        );
        assert_eq!(read_request_marker("no marker"), None);
    }

    #[test]
    fn allowlists_replace_the_permission_rule() {
        use policy::Permission as P;
        let listed = vec!["Alice".to_string()];
        assert_eq!(
            authorize("alice", None, &listed, P::Write, "/compute", Kind::Run),
            Decision::Proceed
        );
        assert!(matches!(
            authorize("bob", Some(Permission::Admin), &listed, P::Write, "/compute", Kind::Run),
            Decision::Refuse(t) if t.contains("lists")
        ));
        assert!(matches!(
            authorize("bob", Some(Permission::Admin), &listed, P::Maintain, "/compute", Kind::Approve),
            Decision::Refuse(t) if t.contains("approve")
        ));
        assert_eq!(
            authorize(
                "bob",
                Some(Permission::Maintain),
                &[],
                P::Maintain,
                "/compute",
                Kind::Approve
            ),
            Decision::Proceed
        );
        assert!(matches!(
            authorize("bob", Some(Permission::Write), &[], P::Maintain, "/compute", Kind::Deny),
            Decision::Refuse(t) if t.contains("deny") && t.contains("maintain")
        ));
        assert!(matches!(
            authorize("bob", None, &[], P::Read, "/compute", Kind::Run),
            Decision::Refuse(_)
        ));
    }

    #[test]
    fn stages_map_onto_the_checklist() {
        assert_eq!(
            map_stage(AgentStage::Generating { attempt: 2, of: 3 }, 3),
            Some((texts::Stage::Generating, 2, 3))
        );
        assert_eq!(
            map_stage(AgentStage::Running { attempt: 1 }, 1),
            Some((texts::Stage::Running, 1, 1))
        );
        assert_eq!(map_stage(AgentStage::Explaining, 1), None);
    }
}
