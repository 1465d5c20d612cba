//! Watches in the Action: `schedule` / `workflow_dispatch` runs without a
//! goal or code run the repository's watches (`.github/compute/*.yml`, the
//! `watches` input) and keep one sticky comment per watch; `pull_request`
//! runs compare the watches whose inputs the pull request changes.
//!
//! - **Every run** goes through the normal loop ([`Agent::answer`](crate::agent::Agent::answer)) with the
//!   policy in force, the watch's checks as `output.checks` (a failed check
//!   stops, never escalates) and its schema; its inputs go through the one
//!   admission ([`crate::github::inputs::resolve`]); the report (with its run
//!   record) is written under `compute-bot-reports/` for `replay`.
//! - **Schedule and dispatch**: the sticky comment of a watch is the bot's
//!   own comment with [`watch_marker`](crate::github::texts::watch_marker) in the watch's `issue`, edited
//!   in place; its hidden state marker keeps the history. A new comment (the
//!   notification) only when a value moved beyond the watch's `tolerance`, a
//!   check started or stopped failing, or the result went or came back.
//! - **Pull requests**: the watch files are read at the **base** sha (never
//!   the pull request's edit of them), the inputs at the base and the head
//!   sha through the contents API into a temporary workspace; one comment
//!   ([`WATCH_PR_MARKER`](crate::github::texts::WATCH_PR_MARKER)) is created or edited. A fork's pull request
//!   (read-only token) gets the job summary and the exit status only.
//! - A failed check or a run without a result fails the job (exit 1) with
//!   an `::error title=...::` annotation naming the watch and the check.

pub(crate) mod pull_request;
mod runner;
pub(crate) mod schedule;
pub(crate) mod state;
