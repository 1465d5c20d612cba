//! How a run ends on GitHub: every handler (a request, `approve`, `deny`, a
//! reply) returns `Result<Published, Stop>`, and [`conclude`] alone writes
//! the end — the comment, the reaction, the outputs, the summary — and
//! decides the status from the final state:
//!
//! - what the thread should show was posted (or there is no thread): the
//!   handler's status; GitHub errors on the way (a first POST that failed and
//!   was recovered, a reaction) are warnings;
//! - it could not be posted: the summary still has it, the asking comment
//!   gets 😕 instead of 🚀, every GitHub error is an `::error::` annotation
//!   and the run exits at least 1 ([`Exit::unposted`]).

use std::collections::BTreeMap;
use std::io::Write;

use crate::agent::PendingExplanation;
use crate::github::actions::event::ActionEnv;
use crate::github::actions::workflow::{self, Outputs};
use crate::github::rest::client::{GitHub, GitHubError};
use crate::github::rest::comments::Reaction;
use crate::github::texts;
use crate::github::tracking::Tracker;
use crate::policy::{Act, Permission, PermissionCheck, Policy, Refusal};
use crate::render::{self, RenderContext};
use crate::report::Report;
use crate::sandbox::{Runtime, Session};
use crate::status::{Exit, Status};

/// What every handler of one run shares.
pub(crate) struct Ctx<'a> {
    pub(crate) env: &'a ActionEnv,
    pub(crate) vars: &'a BTreeMap<String, String>,
    pub(crate) policy: &'a Policy,
    pub(crate) gh: &'a GitHub,
    pub(crate) prefix: &'a str,
    /// The OCI runtime of this run's containers: the policy's, else the
    /// runner's `COMPUTE_BOT_RUNTIME`, else runc (resolved once, in `action`).
    pub(crate) runtime: Runtime,
    /// The engine connection, made when a handler first needs it.
    pub(crate) session: &'a Session,
    /// The `github:` data fetched in this run (each query list once).
    pub(crate) fetched: &'a crate::github::activity::Cache,
}

impl Ctx<'_> {
    /// The link to comment `id` on `issue` of the repository.
    pub(crate) fn comment_url(&self, issue: u64, id: u64) -> String {
        format!(
            "{}/{}/{}/issues/{issue}#issuecomment-{id}",
            self.env.server_url.trim_end_matches('/'),
            self.env.repository.owner,
            self.env.repository.name
        )
    }
}

/// Who asked, with the policy's check still to finish with their
/// permission on the repository: every comment handler starts with
/// [`Asker::allowed`], or [`Asker::allowed_while`] to start what its run
/// needs while GitHub answers.
pub(crate) struct Asker<'p> {
    check: PermissionCheck<'p>,
    act: Act,
}

impl<'p> Asker<'p> {
    /// The asker of a command that asks for `act`, as the policy took it.
    pub(crate) fn new(check: PermissionCheck<'p>, act: Act) -> Asker<'p> {
        Asker { check, act }
    }

    /// The asker's login.
    pub(crate) fn login(&self) -> &str {
        self.check.login()
    }

    /// [`Asker::allowed_while`] with nothing to start.
    pub(crate) async fn allowed(self, ctx: &Ctx<'_>) -> Result<Result<(), Published>, Stop> {
        self.allowed_while(ctx, std::future::ready(())).await
    }

    /// Looks up the asker's permission while `early` runs, then finishes
    /// the policy's check: what `early` gave when the asker may go on, else
    /// the reply to the refusal (what `early` gave is dropped; a container
    /// is removed unused). The run stops when GitHub cannot say.
    pub(crate) async fn allowed_while<T>(
        self,
        ctx: &Ctx<'_>,
        early: impl Future<Output = T>,
    ) -> Result<Result<T, Published>, Stop> {
        let (has, early) = tokio::join!(ctx.gh.permission(self.check.login()), early);
        let has = match has {
            Ok(p) => p,
            // GitHub answers 404 for users who are not collaborators of a private repository.
            Err(e) if e.status() == Some(404) => Permission::None,
            Err(e) => return Err(Stop::github(texts::stop::WHO_ASKED, &e)),
        };
        if let Err(why) = self.check.decide(has) {
            let text = refusal_reply(self.act, &why, ctx.prefix);
            log_annotation(
                "notice",
                &format!("compute-bot refused the request: {text}"),
            );
            return Ok(Err(Published::reply(
                Status::Refused,
                &text,
                Reaction::MinusOne,
            )));
        }
        Ok(Ok(early))
    }
}

/// The reply to a refused request, written from the policy's reason.
pub(crate) fn refusal_reply(act: Act, why: &Refusal, prefix: &str) -> String {
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

/// Writes a workflow annotation (`::error::`, `::warning::`, `::notice::`).
pub(crate) fn log_annotation(level: &str, message: &str) {
    let mut out = std::io::stdout().lock();
    let _ = workflow::annotation(&mut out, level, message);
    let _ = out.flush();
}

/// Where a handler's end goes in the thread.
#[derive(Debug)]
pub(crate) enum Post {
    /// Nothing (the summary only).
    Nothing,
    /// A new comment on the issue.
    Reply(String),
    /// The run's tracking comment, created or replaced (the summary only
    /// when the run has no issue).
    Tracking(String),
    /// An answer shown before its explanation came: the tracking comment as
    /// [`Post::Tracking`] with the template's explanation and a note, then
    /// edited in place once the model's explanation arrives, or the note
    /// says it did not ([`Later`]).
    Explaining {
        /// The first text (the template and the note).
        body: String,
        /// What the edit needs.
        later: Box<Later>,
    },
    /// An edit of an existing comment (closing a pending request).
    Edit {
        /// The comment.
        id: u64,
        /// Its new text.
        body: String,
    },
}

/// What an answer posted before its explanation needs to be rendered again
/// once the explanation settles.
#[derive(Debug)]
pub(crate) struct Later {
    /// The explanation call under way.
    pub(crate) pending: PendingExplanation,
    /// The report as posted (with the template's explanation).
    pub(crate) report: Report,
    /// How it was rendered.
    pub(crate) rctx: RenderContext,
    /// The JSON report file (relative to the workspace, or absolute), written
    /// again with the final explanation.
    pub(crate) report_path: Option<String>,
}

/// What a handler that got to its end wants shown.
#[derive(Debug)]
pub(crate) struct Published {
    pub(crate) status: Status,
    pub(crate) post: Post,
    /// The reaction on the asking comment once the post is shown.
    pub(crate) reaction: Option<Reaction>,
    pub(crate) summary: String,
    /// `result`, `code_sha256`, `report_path` (status and comment id are
    /// filled in by [`conclude`]).
    pub(crate) outputs: Outputs,
}

impl Published {
    /// A short reply to the asking comment with a reaction.
    pub(crate) fn reply(status: Status, text: &str, reaction: Reaction) -> Published {
        Published {
            status,
            post: Post::Reply(text.to_string()),
            reaction: Some(reaction),
            summary: texts::reply_summary(text),
            outputs: Outputs::default(),
        }
    }
}

/// Why a handler stopped before it had a result: shown in the thread and
/// the summary as "Nothing was run", with 😕.
#[derive(Debug)]
pub(crate) struct Stop {
    status: Status,
    title: String,
    details: String,
}

impl Stop {
    /// A stop with `status`; `details` is Markdown (neutralized by the caller).
    pub(crate) fn new(status: Status, title: &str, details: impl Into<String>) -> Stop {
        Stop {
            status,
            title: title.to_string(),
            details: details.into(),
        }
    }

    /// The stop as one line of text: its title and details.
    pub(crate) fn text(&self) -> String {
        format!("{}: {}", self.title, self.details)
    }

    /// GitHub could not be read or written where the run needed it.
    pub(crate) fn github(title: &str, e: &GitHubError) -> Stop {
        Stop::new(Status::Failed, title, render::neutralize(&e.to_string()))
    }
}

/// The thread of one run: the asking comment, the tracking comment, and the
/// GitHub errors met on the way.
pub(crate) struct Thread<'a> {
    gh: &'a GitHub,
    issue: Option<u64>,
    reply_to: Option<u64>,
    tracker: Option<Tracker<'a>>,
    errors: Vec<GitHubError>,
}

impl<'a> Thread<'a> {
    /// The thread on `issue` (none: the summary only), answering `reply_to`.
    pub(crate) fn new(gh: &'a GitHub, issue: Option<u64>, reply_to: Option<u64>) -> Thread<'a> {
        Thread {
            gh,
            issue,
            reply_to,
            tracker: None,
            errors: Vec::new(),
        }
    }

    /// Reacts on the asking comment; a failure is remembered.
    async fn react(&mut self, reaction: Reaction) {
        if let Some(id) = self.reply_to
            && let Err(e) = self.gh.add_reaction(id, reaction).await
        {
            self.errors.push(e);
        }
    }

    /// 👀 on the asking comment, without a tracking comment: the end is then
    /// posted as a new comment that is never edited (a plan).
    pub(crate) async fn seen(&mut self) {
        self.react(Reaction::Eyes).await;
    }

    /// Starts this run's tracking comment (👀, "working on it"); returns
    /// whether it is shown. A failure is remembered and the end tries again.
    pub(crate) async fn acknowledge(&mut self, marker: &str, run_url: &str) -> bool {
        self.react(Reaction::Eyes).await;
        let Some(issue) = self.issue else {
            return false;
        };
        let gh = self.gh;
        let tracker = self.tracker.insert(Tracker::new(
            gh,
            issue,
            marker.to_string(),
            Some(run_url.to_string()),
        ));
        match tracker.acknowledge().await {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!("cannot post the tracking comment: {e}");
                self.errors.push(e);
                false
            }
        }
    }

    /// The tracking comment, once started.
    pub(crate) fn tracker(&mut self) -> Option<&mut Tracker<'a>> {
        self.tracker.as_mut()
    }

    /// Writes `post`; returns whether the thread shows it, and the comment.
    async fn post(&mut self, post: Post) -> (bool, Option<u64>) {
        let written = match (post, self.issue) {
            (Post::Nothing, _) | (_, None) => return (true, None),
            (Post::Tracking(body) | Post::Explaining { body, .. }, Some(issue)) => {
                match self.tracker.as_mut() {
                    Some(t) => t.finish(&body).await,
                    // A stop before the tracking comment started: a reply.
                    None => self.gh.create_comment(issue, &body).await,
                }
            }
            (Post::Reply(body), Some(issue)) => self.gh.create_comment(issue, &body).await,
            (Post::Edit { id, body }, Some(_)) => {
                self.gh.update_comment(id, &body).await.map(|()| id)
            }
        };
        match written {
            Ok(id) => (true, Some(id)),
            Err(e) => {
                self.errors.push(e);
                (false, self.tracker.as_ref().and_then(|t| t.comment_id()))
            }
        }
    }
}

/// A stop as what the thread and the summary show.
fn stopped(ctx: &Ctx<'_>, stop: Stop) -> Published {
    log_annotation(
        "error",
        &format!("compute-bot: {}: {}", stop.title, stop.details),
    );
    let text = texts::stopped(&stop.title, &stop.details, &ctx.env.run_url());
    Published {
        status: stop.status,
        post: Post::Tracking(text.clone()),
        reaction: Some(Reaction::Confused),
        summary: text,
        outputs: Outputs::default(),
    }
}

/// Ends a run: posts the handler's end, reacts, writes the outputs and the
/// summary; the final state decides the exit (see the module docs).
pub(crate) async fn conclude(
    ctx: &Ctx<'_>,
    mut thread: Thread<'_>,
    end: Result<Published, Stop>,
) -> Exit {
    let mut end = match end {
        Ok(p) => p,
        Err(stop) => stopped(ctx, stop),
    };
    let (post, later) = match std::mem::replace(&mut end.post, Post::Nothing) {
        Post::Explaining { body, later } => (Post::Tracking(body), Some(later)),
        post => (post, None),
    };
    let (shown, comment_id) = thread.post(post).await;
    // 🚀 (or 👎, 👍) only for what the thread shows.
    let reaction = if shown {
        end.reaction
    } else {
        Some(Reaction::Confused)
    };
    if let Some(r) = reaction {
        thread.react(r).await;
    }
    if let Some(later) = later {
        explained(
            ctx,
            &mut thread,
            *later,
            comment_id.filter(|_| shown),
            &mut end,
        )
        .await;
    }
    note_github_errors(&thread.errors, shown, &mut end.summary);
    if let Some(note) = end.outputs.result_note() {
        log_annotation("warning", &format!("compute-bot: {note}"));
        end.summary
            .insert_str(0, &format!("> [!NOTE]\n> {note}\n\n"));
    }
    end.outputs.status = end.status.as_str().to_string();
    end.outputs.comment_id = comment_id;
    write_end(ctx.env, &end.outputs, Some(&end.summary));
    Exit::action(end.status).unposted(!shown)
}

/// Waits for the explanation of an answer posted without it, edits
/// `comment` (the answer, when the thread shows it) to the final text, and
/// puts that text into the summary, the `usage` output and the report file.
async fn explained(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    later: Later,
    comment: Option<u64>,
    end: &mut Published,
) {
    let Later {
        pending,
        mut report,
        rctx,
        report_path,
    } = later;
    pending.settle(&mut report).await;
    if let Some(id) = comment
        && let Err(e) = thread
            .gh
            .update_comment(id, &render::markdown(&report, &rctx))
            .await
    {
        tracing::warn!("cannot edit the answer to its explanation: {e}");
        thread.errors.push(e);
    }
    end.summary = render::summary(&report, &rctx);
    end.outputs.usage = Some(crate::usage::Usage::of(&report).json());
    if let Some(path) = report_path {
        let path = ctx.env.workspace.join(path);
        let written = serde_json::to_string_pretty(&report)
            .map_err(|e| e.to_string())
            .and_then(|json| std::fs::write(&path, json).map_err(|e| e.to_string()));
        if let Err(e) = written {
            log_annotation(
                "warning",
                &format!(
                    "compute-bot: cannot write the report again ({}): {e}",
                    path.display()
                ),
            );
        }
    }
}

/// Logs the GitHub errors of the run and notes them in the summary: as
/// errors when the thread does not show the end, else as warnings.
fn note_github_errors(errors: &[GitHubError], shown: bool, summary: &mut String) {
    if errors.is_empty() {
        return;
    }
    let (level, head) = if shown {
        (
            "warning",
            "> [!NOTE]\n> Some GitHub calls failed on the way; the thread shows the result:\n",
        )
    } else {
        (
            "error",
            "> [!CAUTION]\n> compute-bot could not post to GitHub, so the thread does not show this:\n",
        )
    };
    let mut note = String::from(head);
    for e in errors {
        log_annotation(level, &format!("compute-bot: {e}"));
        note.push_str(&format!("> - {}\n", render::neutralize(&e.to_string())));
    }
    note.push('\n');
    summary.insert_str(0, &note);
}

/// Writes the outputs and the summary (when the runner named the files).
fn write_end(env: &ActionEnv, outputs: &Outputs, summary: Option<&str>) {
    if let Some(path) = &env.output
        && let Err(e) = workflow::write_outputs(path, &outputs.pairs())
    {
        log_annotation("warning", &format!("compute-bot: {e}"));
    }
    if let (Some(path), Some(text)) = (&env.step_summary, summary)
        && let Err(e) = workflow::append_summary(path, text)
    {
        log_annotation("warning", &format!("compute-bot: {e}"));
    }
}

/// Ends a run before any GitHub call (ignored events, configuration):
/// outputs and summary only.
pub(crate) fn end_quietly(env: &ActionEnv, status: Status, summary: Option<&str>) -> Exit {
    let outputs = Outputs {
        status: status.as_str().to_string(),
        ..Outputs::default()
    };
    write_end(env, &outputs, summary);
    Exit::action(status)
}
