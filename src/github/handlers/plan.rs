//! `/compute plan <goal>`: plan first, then run exactly what was shown
//! (with `/compute run`, [`super::run`]).
//!
//! A plan is generated and checked like any request, but no container is
//! started; the bot posts the plan, the exact code, the policy verdict and
//! the code's sha256 as a **new comment it never edits** (status `planned`).

use crate::github::execute::execute;
use crate::github::spec::RunSpec;
use crate::github::thread::{Ctx, Published, Stop, Thread};

/// `/compute plan`: the run's code is generated (or taken) and checked;
/// nothing runs.
pub(crate) async fn plan(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    spec: RunSpec,
) -> Result<Published, Stop> {
    let spec = RunSpec {
        plan_only: true,
        ..spec
    };
    execute(ctx, thread, spec).await
}

#[cfg(test)]
mod tests {
    use crate::github::handlers::tester::{
        Scripted, Tester, assert_answer, fenced, shipped_policy,
    };

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
