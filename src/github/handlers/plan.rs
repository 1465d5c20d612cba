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
