//! `/compute run [<sha256 prefix>]`: run exactly the newest plan's code
//! (see [`super::plan`] for the plan).
//!
//! `/compute run`, by whoever the policy's `who` lets run code, takes the
//! newest plan in the thread and runs exactly its code:
//!
//! - only comments written by the identity the bot posts as count
//!   ([`GitHub::own_login`](crate::github::rest::client::GitHub::own_login)); a
//!   plan marker in anyone else's comment is ignored;
//! - the plan comment must be unedited (`updated_at` not after
//!   `created_at`) and its code must hash to the sha256 in its hidden marker
//!   ([`texts::read_plan`]); with `/compute run <sha256 prefix>` it must also
//!   start with that prefix;
//! - the inputs must still have the hashes the plan was made with.
//!
//! The run is an ordinary request for exact code: checked again against the
//! policy (an escalation then waits for an approval as always), run,
//! validated; its comment links the plan.

use crate::github::execute::execute;
use crate::github::rest::comments::{CommentInfo, Reaction};
use crate::github::spec::{FromPlan, RunSpec};
use crate::github::texts::{self, read_request_marker, stop};
use crate::github::thread::{Asker, Ctx, Published, Stop, Thread};
use crate::status::Status;

/// The newest comment of the bot's own that carries a plan marker.
async fn newest_plan(ctx: &Ctx<'_>, issue: u64) -> Result<Option<CommentInfo>, Stop> {
    let read = |e| Stop::github(stop::THREAD_UNREADABLE, &e);
    let comments = ctx.gh.list_comments(issue).await.map_err(read)?;
    let own = ctx.gh.own_login().await.map_err(read)?;
    Ok(comments
        .into_iter()
        .rev()
        .filter(|c| c.author_login.eq_ignore_ascii_case(&own))
        .find(|c| texts::has_plan_marker(&c.body)))
}

/// `/compute run [<sha256 prefix>]` by `asker`: runs exactly the code of
/// the newest plan in `issue` (see the module docs for what is checked).
pub(crate) async fn run_plan(
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
            &texts::plan_invalid(reason, ctx.prefix),
            Reaction::Confused,
        )
    };
    let Some(comment) = newest_plan(ctx, issue).await? else {
        return Ok(Published::reply(
            Status::Ignored,
            &texts::nothing_planned(author, ctx.prefix),
            Reaction::Confused,
        ));
    };
    if comment.edited {
        return Ok(invalid(&texts::plan_edited(&comment.html_url)));
    }
    let code = match texts::read_plan(&comment.body) {
        Ok(c) => c,
        Err(e) => {
            return Ok(invalid(&texts::plan_unreadable(
                &comment.html_url,
                &e.to_string(),
            )));
        }
    };
    if let Some(prefix) = sha256_prefix
        && !code.sha256.starts_with(prefix)
    {
        return Ok(invalid(&texts::plan_names_other_code(prefix, &code.sha256)));
    }
    let request = read_request_marker(&comment.body).unwrap_or_default();
    let spec = RunSpec {
        from_plan: Some(FromPlan {
            by: author.to_string(),
            sha256: code.sha256,
            plan_url: comment.html_url,
        }),
        ..RunSpec::shown(request, code.code)
    };
    execute(ctx, thread, spec).await
}

#[cfg(test)]
mod tests {
    use crate::github::handlers::tests::{Scripted, Tester, assert_answer, fenced, shipped_policy};

    const CODE: &str = "import json\nprint(json.dumps({\"total\": 42}))\n";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn run_runs_exactly_the_newest_plan_and_links_it() {
        let mut t = Tester::new(
            &shipped_policy("default.yml"),
            [Scripted::ok("{\"total\": 42}\n")],
        )
        .await;
        let plan = t
            .comment(
                "alice",
                &format!("/compute plan the total\n{}", fenced(CODE)),
            )
            .await;
        assert_eq!(plan.status, "planned");
        let answer = t.comment("alice", "/compute run").await;
        assert_eq!(t.executor.codes(), vec![CODE.to_string()]);
        assert_answer!(answer);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn run_without_a_plan_says_there_is_nothing_to_run() {
        let mut t = Tester::new(&shipped_policy("default.yml"), []).await;
        let answer = t.comment("alice", "/compute run").await;
        assert_answer!(answer);
    }
}
