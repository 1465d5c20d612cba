//! `/compute plan <goal>`: plan first, then run exactly what was shown
//! (with `/compute run`, [`super::run`]).
//!
//! A plan is generated and checked like any request, but no container is
//! started; the bot posts the plan, the exact code, the policy verdict and
//! the code's sha256 as a **new comment it never edits** (status `planned`).

use crate::github::command::Ask;
use crate::github::execute::{asked_run, execute};
use crate::github::spec::RunSpec;
use crate::github::thread::{Asker, Ctx, Published, Stop, Thread};

/// `/compute plan`: the run `ask` names, by `asker`, is generated (or
/// taken) and checked; nothing runs, and no container is started.
pub(crate) async fn plan(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    issue: u64,
    asker: Asker<'_>,
    ask: &Ask,
) -> Result<Published, Stop> {
    let mut spec = RunSpec {
        plan_only: true,
        ..RunSpec::asked(ask)
    };
    // A problem with the code it names is answered once the asker may run code.
    let named = spec.take_named_code(&ctx.env.workspace, ctx.policy.session.in_steps());
    if let Err(refused) = asker.allowed(ctx).await? {
        return Ok(refused);
    }
    match asked_run(ctx, issue, ask, spec, named).await? {
        Ok(spec) => execute(ctx, thread, spec).await,
        Err(usage) => Ok(usage),
    }
}

#[cfg(test)]
mod tests {
    use crate::github::handlers::tests::{Scripted, Tester, assert_answer, fenced, shipped_policy};

    const CODE: &str = "import json\nprint(json.dumps({\"total\": 42}))\n";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_plan_is_posted_as_a_new_comment_and_nothing_runs() {
        let mut t = Tester::new(&shipped_policy("default.yml"), [Scripted::ok("")]).await;
        let answer = t
            .comment(
                "alice",
                &format!("/compute plan the total\n{}", fenced(CODE)),
            )
            .await;
        assert_eq!(t.executor.prepared(), 0, "a plan starts no container");
        assert!(t.executor.codes().is_empty());
        assert_answer!(answer);
    }
}
