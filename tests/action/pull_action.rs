//! The Action on a runner whose engine lacks the policy's sandbox image
//! (pinned by digest, in the loopback registry of `support::registry`): the
//! bot pulls it itself, with no pull step before it, for exact code (the
//! pull starts beside the permission check) and for a goal the model
//! answers (beside the generation), answers, and leaves the image tagged
//! for the job's later steps. The sandbox image's layers are in the
//! engine's store already (the local `compute-bot-sandbox:python`), so the
//! pull fetches its manifest and config; the byte counts of a real
//! download are covered in `tests/sandbox/pull.rs`.

use serde_json::{Value, json};

use crate::support::action_fixture::{ActionFixture, COMMENT, fenced, snapshot_sandbox_comment};
use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Reply};
use crate::support::registry::{Forget, HeldRegistry, engine_has, pulls_of, push_and_forget, repo};

fn pinned_policy(image: &str) -> String {
    format!("version: 1\nsandbox:\n  image: {image}\n  preload: []\n")
}

/// The tag the bot gives an image it pulled by digest only.
fn tag_after_pull(pinned: &str) -> String {
    let (name, digest) = pinned.split_once('@').unwrap();
    format!("{name}:{}", digest.replace(':', "-"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_code_on_an_engine_without_the_image_pulls_it_and_answers() {
    let repo = repo("action-code");
    let _forget = Forget(repo.clone());
    let pinned = push_and_forget("compute-bot-sandbox:python", &repo);
    let f = ActionFixture::builder()
        .policy(&pinned_policy(&pinned))
        .start()
        .await;
    let code = "import json\nprint(json.dumps({\"answer\": 6 * 7}))\n";
    f.comment("alice", &format!("/compute the answer\n{}", fenced(code)));
    let since = chrono::Utc::now().timestamp();
    let run = f.run(COMMENT, "9801").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"answer": 42})
    );
    assert_eq!(pulls_of(&repo, since), 1, "{}", run.log());
    assert!(engine_has(&pinned) && engine_has(&tag_after_pull(&pinned)));
    // Not a snapshot: the policy names a registry repository of this test
    // process, so the record's policy hash changes with every run.
    let body = &f.bot_comments(7)[0].body;
    assert!(body.contains("✅ compute-bot: result"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_on_an_engine_without_the_image_pulls_it_while_the_model_writes() {
    let repo = repo("action-goal");
    let _forget = Forget(repo.clone());
    let pinned = push_and_forget("compute-bot-sandbox:python", &repo);
    let f = ActionFixture::builder()
        .policy(&pinned_policy(&pinned))
        .start()
        .await;
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code(
        "Print the answer.",
        "import json\nprint(json.dumps({'answer': 42}))",
    ));
    llm.push(Reply::text("The answer is 42."));
    f.comment("alice", "/compute what is six times seven?");
    let since = chrono::Utc::now().timestamp();
    let run = f
        .run_env(f.env(COMMENT, "9802").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(f.report(&run)["status"], "ok", "{}", run.log());
    assert_eq!(pulls_of(&repo, since), 1, "{}", run.log());
    assert!(engine_has(&pinned));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_digest_the_registry_lacks_stops_the_run_with_the_reason() {
    let repo = repo("action-wrong");
    let _forget = Forget(repo.clone());
    push_and_forget("compute-bot-sandbox:python", &repo);
    let wrong = format!("{repo}@sha256:{}", "e".repeat(64));
    let f = ActionFixture::builder()
        .policy(&pinned_policy(&wrong))
        .start()
        .await;
    f.comment(
        "alice",
        &format!("/compute the answer\n{}", fenced("print(42)\n")),
    );
    let run = f.run(COMMENT, "9803").await;
    assert_ne!(run.code, 0, "{}", run.log());
    let body = &f.bot_comments(7)[0].body;
    // Could not be pulled: the registry has no image; `sandbox.image` named.
    snapshot_sandbox_comment("pull_failed", body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tracking_comment_shows_the_pull_while_the_image_comes() {
    let repo = repo("action-held");
    let _forget = Forget(repo.clone());
    let pinned = push_and_forget("compute-bot-sandbox:python", &repo);
    // The registry answers only once the comment has shown the pull.
    let held = HeldRegistry::start().await;
    let through = held.through(&pinned);
    let _forget_through = Forget(through.split_once('@').unwrap().0.to_string());
    let f = ActionFixture::builder()
        .policy(&pinned_policy(&through))
        .start()
        .await;
    let code = "import json\nprint(json.dumps({\"answer\": 6 * 7}))\n";
    f.comment("alice", &format!("/compute the answer\n{}", fenced(code)));
    let watch = async {
        let until = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut seen = None;
        while seen.is_none() && tokio::time::Instant::now() < until {
            seen = f
                .bot_comments(7)
                .into_iter()
                .map(|c| c.body)
                .find(|b| b.contains("preparing the sandbox image"));
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        held.release();
        seen
    };
    let (run, seen) = tokio::join!(f.run(COMMENT, "9804"), watch);
    let seen = seen.unwrap_or_else(|| panic!("the comment never showed the pull\n{}", run.log()));
    assert!(
        seen.contains("**→** running in the sandbox (preparing the sandbox image"),
        "{seen}"
    );
    assert_eq!(run.code, 0, "{}", run.log());
    let body = &f.bot_comments(7)[0].body;
    // Not a snapshot: as above, the record's policy hash changes every run.
    assert!(body.contains("✅ compute-bot: result"), "{body}");
    assert!(!body.contains("preparing the sandbox image"), "{body}");
    assert!(engine_has(&through));
}
