//! `/compute <goal>`: the code is generated (or taken from the comment's
//! fenced block, or the checkout's file it names) and run through the
//! loop. Exact code gets its container while GitHub says who asked
//! ([`Asker::allowed_while`] with [`prepare_ahead`]): nothing is handed to it before the answer allows
//! the run (the code goes in at `execute`); a refusal drops it and it is
//! removed unused.

use crate::github::command::Ask;
use crate::github::execute::{asked_run, execute_ahead, prepare_ahead};
use crate::github::spec::RunSpec;
use crate::github::thread::{Asker, Ctx, Published, Stop, Thread};

/// `/compute <goal>`: the run `ask` names, by `asker`, in the container
/// started for its exact code when there is one.
pub(crate) async fn compute(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    issue: u64,
    asker: Asker<'_>,
    ask: &Ask,
) -> Result<Published, Stop> {
    // The code it names in the checkout (`code=`, or a notebook the goal
    // mentions) is read first, so its container starts early too; a
    // problem with it is answered once the asker may run code.
    let mut spec = RunSpec::asked(ask);
    let named = spec.take_named_code(&ctx.env.workspace, ctx.policy.session.in_steps());
    let ahead = match asker.allowed_while(ctx, prepare_ahead(ctx, &spec)).await? {
        Ok(ahead) => ahead,
        Err(refused) => return Ok(refused),
    };
    match asked_run(ctx, issue, ask, spec, named).await? {
        Ok(spec) => execute_ahead(ctx, thread, spec, ahead).await,
        Err(usage) => Ok(usage),
    }
}

#[cfg(test)]
mod tests {
    use crate::github::handlers::tests::{Scripted, Tester, assert_answer, fenced, shipped_policy};

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
