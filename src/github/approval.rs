//! `/compute approve` and `/compute deny`: the code waiting for approval is
//! read back from the bot's own comment (hash checked), the request is
//! closed, and an approval runs exactly that code on the same inputs.

use serde::{Deserialize, Serialize};

use crate::github::action::{
    Ctx, EXIT_FAILED, EXIT_OK, Ending, conclude, reply, report_post_errors,
};
use crate::github::client::{CommentInfo, GitHub, GitHubError, Reaction};
use crate::github::request::{Approval, Job, execute};
use crate::github::texts::{self, PendingCode, PendingError};

const REQUEST_MARKER_START: &str = "<!-- compute-bot:request=";
const MARKER_END: &str = " -->";

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
/// none, or the thread cannot be read, the user is told and the exit status
/// comes back as the error.
async fn open_request(
    ctx: &Ctx<'_>,
    issue: u64,
    comment_id: u64,
    author: &str,
) -> Result<(CommentInfo, Result<PendingCode, PendingError>), i32> {
    match find_pending(ctx.gh, issue).await {
        Ok(Some(pending)) => Ok(pending),
        Ok(None) => Err(reply(
            ctx,
            issue,
            comment_id,
            &texts::nothing_pending(author, ctx.prefix),
            Reaction::Confused,
            "ignored",
            EXIT_OK,
        )
        .await),
        Err(e) => {
            let mut summary = String::from("### compute-bot could not read the thread\n");
            let exit = report_post_errors(&[e], &mut summary, EXIT_FAILED);
            Err(conclude(
                ctx.env,
                Ending::status("error", exit).with_summary(summary),
            ))
        }
    }
}

/// `/compute approve [<sha256 prefix>]`: runs the newest open pending code,
/// if its hash still matches (and starts with `sha256_prefix` when given).
pub(crate) async fn approve(
    ctx: &Ctx<'_>,
    issue: u64,
    comment_id: u64,
    author: &str,
    sha256_prefix: Option<&str>,
) -> i32 {
    let (comment, code) = match open_request(ctx, issue, comment_id, author).await {
        Err(exit) => return exit,
        Ok((_, Err(e))) => {
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
        Ok((c, Ok(code))) => (c, code),
    };
    if let Some(prefix) = sha256_prefix
        && !code.sha256.starts_with(prefix)
    {
        let reason = format!(
            "the approval names sha256 `{prefix}…`, but the code waiting for approval has sha256 `{}` (was the comment edited?); read the code again and approve it with its current hash",
            code.sha256
        );
        return reply(
            ctx,
            issue,
            comment_id,
            &texts::approval_invalid(&reason),
            Reaction::Confused,
            "failed",
            EXIT_FAILED,
        )
        .await;
    }
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

/// `/compute deny`: closes the newest open pending request; nothing runs.
pub(crate) async fn deny(ctx: &Ctx<'_>, issue: u64, comment_id: u64, author: &str) -> i32 {
    let comment = match open_request(ctx, issue, comment_id, author).await {
        Ok((comment, _)) => comment,
        Err(exit) => return exit,
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
}
