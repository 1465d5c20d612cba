//! Follow-ups: a `/compute` in a thread that holds earlier answers builds on
//! one of them. This module reads the thread and returns plain data, a
//! [`EarlierAnswer`]; the request hands it to the prompt and takes its inputs.
//!
//! - **Which answer**: the one the comment links (`#issuecomment-<id>`),
//!   else the one it quotes (the most quoted lines, `> ...`), else the
//!   newest. An answer is a comment written by the identity the bot posts
//!   as ([`GitHub::own_login`](crate::github::rest::client::GitHub::own_login))
//!   that carries a readable run record (`<!-- compute-bot:record ... -->`,
//!   so code ran); markers in anyone else's comments are ignored. All pages
//!   of the thread are read ([`GitHub::list_comments`](crate::github::rest::client::GitHub::list_comments)).
//! - **What is taken**: the goal and context (the answer's request marker),
//!   the code shown — only when it hashes to the record's `code_sha256` —,
//!   the result kept in the record (small results only), how the run ended,
//!   the input paths, and where its `github:` data's snapshots are kept (a
//!   follow-up on the same sources reads them back, not fetching again).
//! - A thread without an answer gives `None`: the request is as any other.

use crate::github::activity::earlier::{self, EarlierData};
use crate::github::rest::client::GitHubError;
use crate::github::rest::comments::CommentInfo;
use crate::github::texts::read_request_marker;
use crate::github::thread::{Ctx, log_annotation};
use crate::prompt::{Earlier, EarlierStep};
use crate::record::{RECORD_MARKER_START, RunRecord};
use crate::replay::Recorded;
use crate::sandbox::sha256_hex;

/// The earlier answer a follow-up builds on.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct EarlierAnswer {
    /// What the prompt shows of it: its goal, the code that ran (when the
    /// comment still shows it unchanged), its result (when the record
    /// carries it) and how its run ended.
    pub(crate) answer: Earlier,
    /// The workspace paths of its inputs.
    pub(crate) inputs: Vec<String>,
    /// The answer comment's URL.
    pub(crate) url: String,
    /// Its `github:` inputs and where their snapshots are kept: a follow-up
    /// on the same sources reads them back (see
    /// [`crate::github::activity::earlier`]).
    pub(crate) data: Vec<EarlierData>,
}

/// The earlier answer in `issue` that the asking comment's `text` builds on
/// (see the module docs), or `None` when the thread has no answer. When the
/// thread cannot be read, a warning says the request goes on as a new one.
pub(crate) async fn find_earlier(ctx: &Ctx<'_>, issue: u64, text: &str) -> Option<EarlierAnswer> {
    match read_thread(ctx, issue, text).await {
        Ok(p) => p,
        Err(e) => {
            log_annotation(
                "warning",
                &format!(
                    "compute-bot: could not read the thread for earlier answers ({e}); answering without them"
                ),
            );
            None
        }
    }
}

async fn read_thread(
    ctx: &Ctx<'_>,
    issue: u64,
    text: &str,
) -> Result<Option<EarlierAnswer>, GitHubError> {
    let comments = ctx.gh.list_comments(issue).await?;
    let own = ctx.gh.own_login().await?;
    let mut answers: Vec<(u64, String, EarlierAnswer)> = comments
        .into_iter()
        .filter(|c| c.author_login.eq_ignore_ascii_case(&own))
        .filter(|c| c.body.contains(RECORD_MARKER_START))
        .filter_map(|c| answer_of(&c).map(|p| (c.id, c.body, p)))
        .collect();
    let pairs: Vec<(u64, &str)> = answers.iter().map(|(id, b, _)| (*id, b.as_str())).collect();
    Ok(choose(&pairs, text).map(|i| answers.swap_remove(i).2))
}

/// The index of the answer (id, body; oldest first) `text` builds on:
/// linked, else most quoted, else newest.
fn choose(answers: &[(u64, &str)], text: &str) -> Option<usize> {
    if answers.is_empty() {
        return None;
    }
    if let Some(i) = answers.iter().rposition(|(id, _)| links(text, *id)) {
        return Some(i);
    }
    let quoted: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix('>'))
        .map(str::trim)
        .filter(|l| l.chars().count() >= 8)
        .collect();
    let score = |body: &str| quoted.iter().filter(|q| body.contains(**q)).count();
    let best = answers.iter().map(|(_, b)| score(b)).max().unwrap_or(0);
    if best > 0 {
        return answers.iter().rposition(|(_, b)| score(b) == best);
    }
    Some(answers.len() - 1)
}

/// Whether `text` links the comment `id` (`#issuecomment-<id>` not followed by a digit).
fn links(text: &str, id: u64) -> bool {
    let anchor = format!("issuecomment-{id}");
    text.match_indices(&anchor)
        .any(|(at, _)| !text[at + anchor.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

/// What an answer comment holds, or `None` when its record is unreadable.
fn answer_of(c: &CommentInfo) -> Option<EarlierAnswer> {
    let record = RunRecord::from_comment(&c.body).ok()?;
    let recorded = Recorded::from_comment_body(&c.body, &c.html_url).ok();
    let steps = record
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| EarlierStep {
            code: recorded
                .as_ref()
                .and_then(|r| r.steps.get(i).cloned().flatten()),
            code_sha256: s.code_sha256.clone(),
            stdout_sha256: s.stdout_sha256.clone(),
            error: s.error,
        })
        .collect();
    let code = recorded
        .map(|r| r.code)
        .filter(|code| sha256_hex(code.as_bytes()) == record.code_sha256);
    let request = read_request_marker(&c.body);
    let inputs = match &request {
        Some(r) if !r.inputs.is_empty() => r.inputs.iter().map(|i| i.path.clone()).collect(),
        _ => record
            .inputs
            .iter()
            .filter_map(|i| i.path.clone())
            .collect(),
    };
    let shown = request
        .as_ref()
        .map(|r| r.inputs.as_slice())
        .unwrap_or_default();
    let data = earlier::of_answer(&record.inputs, shown);
    Some(EarlierAnswer {
        data,
        answer: Earlier {
            goal: request.and_then(|r| r.goal),
            code,
            result: record.result.clone(),
            status: record.runtime.status.clone(),
            steps,
            inputs: record
                .inputs
                .iter()
                .map(|i| (i.name.clone(), i.sha256.clone()))
                .collect(),
        },
        inputs,
        url: c.html_url.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(id: u64, body: &'static str) -> (u64, &'static str) {
        (id, body)
    }

    #[test]
    fn the_linked_then_the_quoted_then_the_newest_answer_is_chosen() {
        let a = [
            answer(11, "**Goal:** total per region\nx"),
            answer(12, "**Goal:** rows per day\ny"),
            answer(13, "**Goal:** mean amount\nz"),
        ];
        assert_eq!(choose(&a, "same, but per week"), Some(2));
        assert_eq!(
            choose(&a, "see https://x/issues/7#issuecomment-11 again"),
            Some(0)
        );
        // `issuecomment-1` is not a link to 11.
        assert_eq!(choose(&a, "#issuecomment-1 and #issuecomment-112"), Some(2));
        assert_eq!(
            choose(&a, "> **Goal:** rows per day\n\nonly weekdays"),
            Some(1)
        );
        // A quote every answer shares decides nothing: the newest.
        assert_eq!(choose(&a, "> **Goal:**  \n> short"), Some(2));
        assert_eq!(choose(&[], "anything"), None);
    }
}
