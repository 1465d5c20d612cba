//! The replies to `/compute replay`: the verdict on the newest result in
//! the thread, and where its `github:` data came from.

use crate::markdown::{fenced, neutralize};

/// The verdict for a precondition that does not hold: each problem.
pub(crate) fn cannot_replay(source: &str, problems: &[String]) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| format!("- {}", neutralize(p)))
        .collect();
    format!(
        "### ⛔ compute-bot: cannot replay\n\nThe [result]({source}) cannot be replayed as recorded:\n\n{}\n",
        lines.join("\n")
    )
}

/// The reply when the thread cannot be read.
pub(crate) fn replay_thread_unreadable(error: &str) -> String {
    format!(
        "### 💥 compute-bot: cannot read this thread\n\n{}\n",
        neutralize(error)
    )
}

/// The reply when the thread has no result to replay.
pub(crate) fn nothing_to_replay(command: &str) -> String {
    format!(
        "Nothing to replay: {}. Ask with `{command} <goal>` first.",
        super::NO_RESULT_IN_THREAD
    )
}

/// The problem when the workspace policy no longer allows the recorded
/// code (`denied`: a deny, else an escalation).
pub(crate) fn replay_not_allowed_now(denied: bool, command: &str) -> String {
    format!(
        "the workspace policy does not allow this code now ({}); ask again with `{command}`",
        if denied {
            "deny"
        } else {
            "it needs an approval"
        }
    )
}

/// The note when the `github:` data (`specs`) came from the run's snapshot;
/// `words` says which (see `sources::earlier::origin_words`).
pub(crate) fn replay_data_from_snapshot(specs: &[String], words: &str, command: &str) -> String {
    format!(
        "the GitHub data ({}) came from the run's snapshot: {words}; `{command} replay fresh` fetches it afresh",
        specs.join(", ")
    )
}

/// The note when the `github:` data were asked again and had not changed.
pub(crate) fn replay_data_unchanged(specs: &[String], words: &str) -> String {
    format!("the GitHub data ({}) were {words}", specs.join(", "))
}

/// The note when the `github:` data had to be fetched afresh (`why`).
pub(crate) fn replay_data_afresh(requests: u32, why: &str) -> String {
    format!(
        "the GitHub data was fetched afresh ({requests} requests): {why}; a different result may be the repository's new activity, not the code"
    )
}

/// The note when `replay fresh` fetched the `github:` data again.
pub(crate) fn replay_data_fetched(requests: u32, command: &str) -> String {
    format!(
        "the GitHub data was fetched afresh ({requests} requests), as `{command} replay fresh` asks: a different result may be the repository's new activity, not the code"
    )
}

/// The notes under a verdict, each on its own line.
pub(crate) fn replay_notes(notes: &[String]) -> String {
    notes
        .iter()
        .map(|n| format!("\n_Note: {}_\n", neutralize(n)))
        .collect()
}

/// The verdict when the replay gave the same result: the code's and the
/// result's hashes, the duration and the recorded one (ms).
pub(crate) fn reproduced(
    source: &str,
    code_sha256: &str,
    result_sha256: Option<&str>,
    duration_ms: u64,
    recorded_ms: u64,
    notes: &[String],
) -> String {
    format!(
        "### ✅ compute-bot: reproduced\n\nThe [result]({source}) was replayed: the same code \
         (sha256 `{code_sha256}`) on the same inputs and image gave the same result and stdout \
         (result sha256 `{}`). The code ran {duration_ms} ms (recorded: {recorded_ms} ms).\n{}",
        result_sha256.unwrap_or("(no result)"),
        replay_notes(notes)
    )
}

/// The verdict when the replay came out different: each difference.
pub(crate) fn differs(source: &str, differences: &[String], notes: &[String]) -> String {
    format!(
        "### ⚠️ compute-bot: differs\n\nThe [result]({source}) was replayed with the same \
         code, inputs and image, and came out different, so it is not reproducible:\n\n{}\n{}",
        fenced("text", &differences.join("\n")),
        replay_notes(notes)
    )
}
