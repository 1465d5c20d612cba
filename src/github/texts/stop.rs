//! Why a request stopped before anything ran: the title of each stop (shown
//! as `compute-bot: <title>` by [`super::stopped`]) and the details that
//! have words of their own. A title is a constant; the same concept has
//! one title wherever it stops a run.

use crate::admit::Refused;
use crate::markdown::neutralize;

/// GitHub did not say what permission the asker has.
pub(crate) const WHO_ASKED: &str = "could not check who asked";
/// The thread's comments could not be listed.
pub(crate) const THREAD_UNREADABLE: &str = "could not read the thread";
/// The approved request's comment could not be marked closed.
pub(crate) const NOT_CLOSED: &str = "could not close the approved request";
/// The engine is not reachable.
pub(crate) const SANDBOX_UNAVAILABLE: &str = "the sandbox is not available";
/// The loop could not start (no model answer, a sandbox error, a schema).
pub(crate) const NOT_STARTED: &str = "the request could not start";
/// The `github:` sources could not be fetched or admitted.
pub(crate) const GITHUB_DATA_UNUSABLE: &str = "the GitHub data cannot be used";
/// The workspace inputs are refused by the policy (or missing).
pub(crate) const INPUTS_UNUSABLE: &str = "the inputs cannot be used";
/// The code a request names in the checkout (`code=`, or a notebook its
/// goal mentions) cannot be read or run.
pub(crate) const CODE_UNUSABLE: &str = "the named code cannot be used";
/// An approved run's (or a plan's) inputs changed since they were shown.
pub(crate) const DATA_CHANGED: &str = "the approved request cannot run on the same data";
/// The model settings do not make a client.
pub(crate) const MODEL_UNUSABLE: &str = "the model configuration is not usable";
/// A goal without exact code and no model to write it.
pub(crate) const NO_MODEL_NO_CODE: &str = "no model and no code";

/// The details of [`SANDBOX_UNAVAILABLE`]: the engine's error and what the
/// action needs.
pub(crate) fn sandbox_unavailable(error: &str) -> String {
    format!(
        "{}\n\nThe action needs a Linux runner with Docker (e.g. `ubuntu-latest`).",
        neutralize(error)
    )
}

/// The details of [`INPUTS_UNUSABLE`]: one line per refused input.
pub(crate) fn inputs_unusable(problems: &[Refused]) -> String {
    problems
        .iter()
        .map(|p| {
            format!(
                "- `{}` {}",
                p.path.replace('`', "'"),
                neutralize(&p.problem)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// [`INPUTS_UNUSABLE`] as one line (a watch run's error).
pub(crate) fn inputs_unusable_line(problems: &[Refused]) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| format!("`{}` {}", p.path, p.problem))
        .collect();
    format!("{INPUTS_UNUSABLE}: {}", lines.join("; "))
}

/// The details of [`GITHUB_DATA_UNUSABLE`]: one line per problem.
pub(crate) fn github_data_unusable(problems: &[String]) -> String {
    problems
        .iter()
        .map(|p| format!("- {}", neutralize(p)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// [`GITHUB_DATA_UNUSABLE`] as one line (a watch run's error).
pub(crate) fn github_data_unusable_line(problems: &[String]) -> String {
    format!("{GITHUB_DATA_UNUSABLE}: {}", problems.join("; "))
}

/// The details of [`MODEL_UNUSABLE`]: the error and which inputs set the model.
pub(crate) fn model_unusable(error: &str) -> String {
    format!("{}\n\n{}", neutralize(error), super::MODEL_INPUTS_HINT)
}

/// The details of [`NOT_STARTED`] and of other errors shown as they are.
pub(crate) fn error_details(error: &str) -> String {
    neutralize(error)
}
