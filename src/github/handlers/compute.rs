//! `/compute <goal>`: the code is generated (or taken from the comment's
//! fenced block) and run through the loop. Exact code gets its container
//! while GitHub says who asked ([`prepare_early`]).

use crate::agent::Ahead;
use crate::github::execute::{execute_ahead, prepare_ahead};
use crate::github::spec::RunSpec;
use crate::github::thread::{Ctx, Published, Stop, Thread};

/// Runs the request of a `/compute` comment, in the container started for
/// its exact code when there is one.
pub(crate) async fn compute(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    spec: RunSpec,
    ahead: Option<Ahead>,
) -> Result<Published, Stop> {
    execute_ahead(ctx, thread, spec, ahead).await
}

/// For a `/compute` comment with exact code: its container, started before
/// the permission check. Nothing is handed to it before the answer allows
/// the run (the code goes in at `execute`); a refusal drops it and it is
/// removed unused. `None` for a plan (it runs nothing) and every other
/// command (no run specification).
pub(crate) async fn prepare_early(ctx: &Ctx<'_>, spec: Option<&RunSpec>) -> Option<Ahead> {
    match spec {
        Some(spec) if !spec.plan_only => prepare_ahead(ctx, spec).await,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::github::handlers::tester::{
        Scripted, Tester, assert_answer, fenced, shipped_policy,
    };

    /// Exact code whose run the executor answers with [`ANSWER`].
    const CODE: &str = "import json\nprint(json.dumps({\"total\": 42}))\n";
    const ANSWER: &str = "{\"total\": 42}\n";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn exact_code_runs_and_the_answer_replaces_the_tracking_comment() {
        let mut t = Tester::new(&shipped_policy("default.yml"), [Scripted::ok(ANSWER)]).await;
        let answer = t
            .comment("alice", &format!("/compute the total\n{}", fenced(CODE)))
            .await;
        assert_eq!(t.executor.codes(), vec![CODE.to_string()]);
        assert_answer!(answer);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn who_the_policy_does_not_let_run_code_is_refused_and_nothing_runs() {
        let mut t = Tester::new(&shipped_policy("default.yml"), [Scripted::ok(ANSWER)]).await;
        let answer = t
            .comment("rita", &format!("/compute the total\n{}", fenced(CODE)))
            .await;
        assert!(t.executor.codes().is_empty());
        assert_answer!(answer);
    }
}
