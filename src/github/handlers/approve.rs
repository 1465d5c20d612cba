//! `/compute approve` and `/compute deny`: the code waiting for approval is
//! read back from the bot's own comment (hash checked), the request is
//! closed, and an approval runs exactly that code on the same inputs (its
//! `github:` data read back from the snapshot the request recorded, see
//! [`crate::github::activity::earlier`]).
//!
//! A `needs_approval` result shows the code, its sha256 and the findings
//! (the pending marker of `texts::approval_block`) plus a hidden request
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
//!
//! Code escalated in a session was written for the state the session's
//! earlier steps left: its comment also shows those that ran without an
//! error ([`texts::read_before`], each hash checked), and the approved run
//! runs them first, in one session, each checked and its output compared,
//! then the approved code (see [`crate::agent::Request::before`]).

use crate::github::execute::execute;
use crate::github::rest::client::{GitHub, GitHubError};
use crate::github::rest::comments::{CommentInfo, Reaction};
use crate::github::spec::{Approval, RunSpec};
use crate::github::texts::{self, PendingCode, PendingError, read_request_marker, stop};
use crate::github::thread::{Asker, Ctx, Post, Published, Stop, Thread};
use crate::status::Status;

/// The newest comment written by the identity the bot posts as
/// ([`GitHub::own_login`]; no other account, bot or not) that carries an open
/// pending marker, with the code read back from it (or why it cannot be used).
async fn find_pending(
    gh: &GitHub,
    issue: u64,
) -> Result<Option<(CommentInfo, Result<PendingCode, PendingError>)>, GitHubError> {
    let comments = gh.list_comments(issue).await?;
    let own = gh.own_login().await?;
    for c in comments
        .into_iter()
        .rev()
        .filter(|c| c.author_login.eq_ignore_ascii_case(&own))
    {
        match texts::read_pending(&c.body) {
            Err(PendingError::NoMarker) | Err(PendingError::Closed) => continue,
            r => return Ok(Some((c, r))),
        }
    }
    Ok(None)
}

/// The newest open pending request for `approve` / `deny`; when there is
/// none the reply says so, when the thread cannot be read the run stops.
async fn open_request(
    ctx: &Ctx<'_>,
    issue: u64,
    author: &str,
) -> Result<Result<(CommentInfo, Result<PendingCode, PendingError>), Published>, Stop> {
    match find_pending(ctx.gh, issue).await {
        Ok(Some(pending)) => Ok(Ok(pending)),
        Ok(None) => Ok(Err(Published::reply(
            Status::Ignored,
            &texts::nothing_pending(author, ctx.prefix),
            Reaction::Confused,
        ))),
        Err(e) => Err(Stop::github(stop::THREAD_UNREADABLE, &e)),
    }
}

/// `/compute approve [<sha256 prefix>]`: runs the newest open pending code,
/// if its hash still matches (and starts with `sha256_prefix` when given).
pub(crate) async fn approve(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    issue: u64,
    asker: Asker<'_>,
    sha256_prefix: Option<&str>,
) -> Result<Published, Stop> {
    let author = &asker.login().to_string();
    if let Err(refused) = asker.allowed(ctx).await? {
        return Ok(refused);
    }
    let invalid = |reason: &str| {
        Published::reply(
            Status::Failed,
            &texts::approval_invalid(reason),
            Reaction::Confused,
        )
    };
    let (comment, code) = match open_request(ctx, issue, author).await? {
        Err(reply) => return Ok(reply),
        Ok((_, Err(e))) => return Ok(invalid(&e.to_string())),
        Ok((c, Ok(code))) => (c, code),
    };
    if let Some(prefix) = sha256_prefix
        && !code.sha256.starts_with(prefix)
    {
        return Ok(invalid(&texts::approval_names_other_code(
            prefix,
            &code.sha256,
        )));
    }
    let before = match texts::read_before(&comment.body) {
        Ok(steps) => steps,
        Err(e) => return Ok(invalid(&format!("a step that runs before the code: {e}"))),
    };
    let request = read_request_marker(&comment.body).unwrap_or_default();
    // Close the request before running, so a second approval cannot run it again.
    let closed = format!(
        "{}{}",
        comment.body,
        texts::approved_by(author, &code.sha256)
    );
    if let Err(e) = ctx.gh.update_comment(comment.id, &closed).await {
        return Err(Stop::github(stop::NOT_CLOSED, &e));
    }
    let spec = RunSpec {
        approval: Some(Approval {
            by: author.to_string(),
            sha256: code.sha256,
            request_url: comment.html_url,
            before,
        }),
        ..RunSpec::shown(request, code.code)
    };
    execute(ctx, thread, spec).await
}

/// `/compute deny`: closes the newest open pending request; nothing runs.
pub(crate) async fn deny(ctx: &Ctx<'_>, issue: u64, asker: Asker<'_>) -> Result<Published, Stop> {
    let author = &asker.login().to_string();
    if let Err(refused) = asker.allowed(ctx).await? {
        return Ok(refused);
    }
    let comment = match open_request(ctx, issue, author).await? {
        Ok((comment, _)) => comment,
        Err(reply) => return Ok(reply),
    };
    Ok(Published {
        status: Status::Denied,
        post: Post::Edit {
            id: comment.id,
            body: format!("{}{}", comment.body, texts::denied(author)),
        },
        reaction: Some(Reaction::PlusOne),
        summary: texts::denied_summary(author),
        outputs: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use crate::github::handlers::tests::{
        ESCALATING, Scripted, Tester, assert_answer, fenced, shipped_policy,
    };

    /// A tester with the escalating policy, after `alice` asked for
    /// [`ESCALATING`]: its request waits for an approval.
    async fn escalated() -> Tester {
        let mut t = Tester::new(
            &shipped_policy("escalate.yml"),
            [Scripted::ok("{\"digest\": \"2d711642\", \"total\": 42}\n")],
        )
        .await;
        let pending = t
            .comment(
                "alice",
                &format!(
                    "/compute inputs=data/sales.csv total with a digest\n{}",
                    fenced(ESCALATING)
                ),
            )
            .await;
        assert_eq!(pending.status, "needs_approval");
        assert!(t.executor.codes().is_empty(), "nothing ran");
        t
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn escalated_code_waits_for_an_approval() {
        let mut t = Tester::new(&shipped_policy("escalate.yml"), []).await;
        let answer = t
            .comment(
                "alice",
                &format!(
                    "/compute inputs=data/sales.csv total with a digest\n{}",
                    fenced(ESCALATING)
                ),
            )
            .await;
        assert_answer!(answer);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn approve_closes_the_request_and_runs_exactly_the_shown_code() {
        let mut t = escalated().await;
        let answer = t.comment("maint", "/compute approve").await;
        assert_eq!(t.executor.codes(), vec![ESCALATING.to_string()]);
        assert_answer!(answer);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deny_closes_the_request_and_nothing_runs() {
        let mut t = escalated().await;
        let answer = t.comment("maint", "/compute deny").await;
        assert!(t.executor.codes().is_empty());
        assert_answer!(answer);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_approval_below_the_escalation_permission_is_refused() {
        let mut t = escalated().await;
        let answer = t.comment("alice", "/compute approve").await;
        assert!(t.executor.codes().is_empty());
        assert_answer!(answer);
    }
}
