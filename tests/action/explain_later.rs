//! The answer posted before the model's explanation (`explain.post_after`),
//! and the same comment edited once the explanation arrives: a slow
//! explanation replaces the template and its note in place, one past
//! `explain.timeout` leaves the template saying so, a fast one is posted
//! at once with no edit.

use std::time::Duration;

use crate::support::action_fixture::{
    ActionFixture, COMMENT, ISSUE, fenced, snapshot_sandbox_comment,
};
use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Reply};

/// Exact code: the model is asked only for the explanation.
const CODE: &str = "import json\nprint(json.dumps({\"total\": 42}))\n";
/// The model's explanation.
const WORDS: &str = "The total of the amounts is 42.";
/// The note under the template while the model's words are on their way.
const NOTE: &str = "The model's explanation follows";

/// A fixture whose policy posts after 1 s and waits 4 s for the explanation.
async fn fixture() -> ActionFixture {
    ActionFixture::builder()
        .policy("version: 1\nexplain:\n  timeout: 4s\n  post_after: 1s\n")
        .start()
        .await
}

/// Runs `/compute total` with exact code and `reply` as the explanation;
/// returns the run, the bot's answer and the texts the answer had before.
async fn answer(
    f: &ActionFixture,
    reply: Reply,
    run_id: &str,
) -> (crate::support::ActionRun, String, Vec<String>) {
    let llm = LlmStandin::openai().await;
    llm.push(reply);
    f.comment("alice", &format!("/compute total\n{}", fenced(CODE)));
    let run = f
        .run_env(f.env(COMMENT, run_id).model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(llm.requests().len(), 1, "the explanation only");
    let bots = f.bot_comments(ISSUE);
    assert_eq!(bots.len(), 1, "one comment, edited in place");
    (run, bots[0].body.clone(), bots[0].history.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_explanation_is_posted_as_the_template_then_edited_to_the_models_words() {
    let f = fixture().await;
    let slow = Reply::text(WORDS)
        .with_usage(500, 100)
        .with_delay(Duration::from_secs(2));
    let (run, body, history) = answer(&f, slow, "9101").await;
    // First the answer with the template's explanation and the note …
    let first = history.last().expect("the answer was edited");
    assert!(first.contains(NOTE), "{first}");
    assert!(first.contains("within 4s"), "{first}");
    assert!(first.contains("42") && !first.contains(WORDS), "{first}");
    assert_eq!(
        history.iter().filter(|b| b.contains(NOTE)).count(),
        1,
        "posted once with the note"
    );
    // … then the same comment with the model's words and no note.
    snapshot_sandbox_comment("explained_later", &body);
    assert!(!body.contains(NOTE), "{body}");
    assert!(run.summary.contains(WORDS) && !run.summary.contains(NOTE));
    assert_eq!(f.report(&run)["explanation"], WORDS);
    let usage: serde_json::Value = serde_json::from_str(run.out("usage")).unwrap();
    assert_eq!(
        (&usage["input_tokens"], &usage["output_tokens"]),
        (&serde_json::json!(500), &serde_json::json!(100)),
        "the late explanation's tokens count: {usage}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explanation_past_the_timeout_leaves_the_template_and_says_so() {
    let f = fixture().await;
    let late = Reply::text(WORDS).with_delay(Duration::from_secs(7));
    let (run, body, history) = answer(&f, late, "9102").await;
    assert!(history.last().is_some_and(|b| b.contains(NOTE)));
    assert!(!body.contains(WORDS) && !body.contains(NOTE), "{body}");
    // The template stays (42), saying the model did not explain within 4s.
    snapshot_sandbox_comment("explained_too_late", &body);
    assert!(run.summary.contains("within 4s") && !run.summary.contains(NOTE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_explanation_is_posted_at_once_with_no_edit() {
    let f = fixture().await;
    let (run, body, history) = answer(&f, Reply::text(WORDS), "9103").await;
    snapshot_sandbox_comment("explained_at_once", &body);
    assert!(
        history
            .iter()
            .all(|b| !b.contains(NOTE) && !b.contains(WORDS)),
        "the answer was written once: {history:?}"
    );
    assert!(run.summary.contains(WORDS));
}
