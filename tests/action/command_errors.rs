//! Reserved subcommands parse strictly (issue 32): `/compute approve 7f72`,
//! `/compute replay nonsense`, `/compute run extra` get a reply that says
//! what the subcommand takes, and the model is never asked.

use crate::support::action_fixture::{ActionFixture, COMMENT};
use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Reply};

/// Posts `body` as `login`, runs the action with a model configured, and
/// returns the bot's reply; the model stand-in received nothing.
async fn reply_to(
    f: &ActionFixture,
    llm: &LlmStandin,
    login: &str,
    body: &str,
    run_id: &str,
) -> String {
    let cid = f.comment(login, body);
    let run = f
        .run_env(f.env(COMMENT, run_id).model(llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ignored", "{}", run.log());
    assert_eq!(run.out("code_sha256"), "", "nothing ran");
    assert_eq!(f.gh.reactions(cid), vec!["confused"]);
    assert!(llm.requests().is_empty(), "no model request for {body:?}");
    f.bot_comments(7).pop().expect("a reply").body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mistyped_subcommand_gets_what_it_takes_and_no_model_request() {
    let f = ActionFixture::new().await;
    let llm = LlmStandin::openai().await;
    // Would be the answer if the comment went to the model as a goal.
    llm.push(Reply::code("Plan.", "print(1)\n"));

    let text = reply_to(&f, &llm, "maint", "/compute approve 7f72", "9401").await;
    assert_eq!(
        text,
        "ℹ️ `/compute approve` takes nothing, or the sha256 shown next to the code waiting for approval (its first 8 to 64 hex digits, e.g. `/compute approve 7f722b92`); it was given `7f72`, so nothing was generated or run. A goal cannot start with `approve`: word it differently.\n"
    );

    let text = reply_to(&f, &llm, "alice", "/compute replay nonsense", "9402").await;
    assert_eq!(
        text,
        "ℹ️ `/compute replay` takes nothing, or `fresh` (to fetch the `github:` data again); it was given `nonsense`, so nothing was generated or run. A goal cannot start with `replay`: word it differently.\n"
    );

    let text = reply_to(&f, &llm, "alice", "/compute run extra", "9403").await;
    assert_eq!(
        text,
        "ℹ️ `/compute run` takes nothing, or the sha256 shown with the newest plan (its first 8 to 64 hex digits, e.g. `/compute run 7f722b92`); a plan is asked for with `/compute plan <goal>`; it was given `extra`, so nothing was generated or run. A goal cannot start with `run`: word it differently.\n"
    );

    let text = reply_to(&f, &llm, "alice", "/compute watch", "9404").await;
    assert!(
        text.starts_with("ℹ️ `/compute watch` takes one name") && text.contains("given nothing"),
        "{text}"
    );
    assert_eq!(llm.served(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mistyped_approve_is_refused_to_who_may_not_approve() {
    let f = ActionFixture::new().await;
    let llm = LlmStandin::openai().await;
    let cid = f.comment("rita", "/compute approve 7f72");
    let run = f
        .run_env(f.env(COMMENT, "9405").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.out("status"), "refused", "{}", run.log());
    assert_eq!(f.gh.reactions(cid), vec!["-1"]);
    assert!(llm.requests().is_empty());
}
