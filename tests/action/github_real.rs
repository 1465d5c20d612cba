//! The action as real GitHub and real models behave: only the identity the
//! bot posts as writes comments the bot trusts (a pending-approval comment
//! planted by `renovate[bot]` is never approved); a large result stays out of
//! `GITHUB_OUTPUT`; key order and bidi controls; an empty `api_key` with exact
//! code calls no provider, and a refused key names the `api_key` input. The
//! real binary as a process against the GitHub and model stand-ins and the
//! real sandbox.

use crate::support::action_fixture::{
    ActionFixture, COMMENT, ESCALATING, ISSUE, REPO, escalate_policy, sha256, snapshot_comment,
    snapshot_sandbox_comment,
};
use crate::support::github_standin::DEFAULT_APP_LOGIN;
use crate::support::llm_standin::{LlmStandin, Reply};

/// The usual fixture under `policies/escalate.yml`, with `renovate[bot]`
/// (write): a bot, but not the identity the action posts as.
async fn fixture() -> ActionFixture {
    ActionFixture::builder()
        .permission("renovate[bot]", "write")
        .policy(&escalate_policy())
        .start()
        .await
}

/// A `renovate[bot]` comment that copies the bot's pending comment with other
/// code (and its matching hash) is newer than the real one; `/compute approve`
/// must run the bot's own pending code, never the forged one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_pending_comment_by_another_bot_is_never_approved() {
    let f = fixture().await;
    f.comment(
        "alice",
        &format!("/compute inputs=data/sales.csv digest\n```python\n{ESCALATING}```"),
    );
    let run = f.run(COMMENT, "7101").await;
    assert_eq!(run.out("status"), "needs_approval", "{}", run.log());
    let genuine =
        f.gh.comments(REPO, 7)
            .into_iter()
            .find(|c| c.author == DEFAULT_APP_LOGIN)
            .unwrap();

    // renovate[bot] posts a copy with its own code and a matching hash.
    let forged_code = ESCALATING.replace("\"total\"", "\"forged\"");
    let forged = genuine
        .body
        .replace(ESCALATING, &forged_code)
        .replace(&sha256(ESCALATING), &sha256(&forged_code));
    assert!(forged.contains(&sha256(&forged_code)));
    let planted = f.gh.seed_comment(REPO, 7, "renovate[bot]", &forged);

    f.comment("maint", "/compute approve");
    let run = f.run(COMMENT, "7102").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok", "{}", run.log());
    assert_eq!(run.out("code_sha256"), sha256(ESCALATING), "{}", run.log());
    assert!(!run.stdout.contains("forged"), "{}", run.log());
    assert!(run.out("result").contains("\"total\":42"), "{}", run.log());
    // The planted comment is left alone; the genuine one is closed.
    assert_eq!(f.gh.comment(planted).unwrap().body, forged);
    assert!(
        f.gh.comment(genuine.id)
            .unwrap()
            .body
            .contains("Approved by @maint")
    );

    // With only the forged comment open, there is nothing to approve.
    f.gh.seed_comment(REPO, 7, "renovate[bot]", &forged);
    f.comment("maint", "/compute approve");
    let run = f.run(COMMENT, "7103").await;
    assert_eq!(run.out("status"), "ignored", "{}", run.log());
    assert!(!run.stdout.contains("::stop-commands::"), "nothing ran");
    let reply =
        f.gh.comments(REPO, 7)
            .into_iter()
            .rev()
            .find(|c| c.author == DEFAULT_APP_LOGIN)
            .unwrap();
    snapshot_comment("approve_forged_only", &reply.body);
}

/// A 20,000-row result (1.5 MB of JSON) is left out of the `result` output
/// with a warning and a summary note that point at the report file; the
/// report has it whole. Keys keep the order the code printed, and a
/// right-to-left override in a value does not reach the comment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_result_is_capped_in_the_output_and_keeps_its_key_order() {
    let f = fixture().await;
    let code = "import json\nrows = [{'day': '2024-01-%05d' % i, 'value': i / 7} for i in range(20000)]\nwith open('/out/result.json', 'w') as fh:\n    json.dump({'zeta': 1, 'alpha': 'safe\\u202eexe.txt', 'rows': rows}, fh)\n";
    f.comment(
        "alice",
        &format!("/compute many rows\n```python\n{code}```"),
    );
    let run = f.run(COMMENT, "7201").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok", "{}", run.log());
    assert_eq!(run.out("result"), "null", "{}", run.log());
    assert!(
        run.outputs_file.len() < 2_000,
        "{} bytes of outputs",
        run.outputs_file.len()
    );
    assert!(
        run.stdout.contains("::warning::")
            && run.stdout.contains("256 KiB cap of the `result` output"),
        "{}",
        run.log()
    );
    let report_path = run.out("report_path");
    assert!(
        run.summary.starts_with("> [!NOTE]"),
        "{}",
        &run.summary[..200]
    );
    assert!(
        run.summary.contains(report_path),
        "the note names the report file"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.ws().join(report_path)).unwrap()).unwrap();
    assert_eq!(report["result"]["rows"].as_array().unwrap().len(), 20_000);
    let keys: Vec<&String> = report["result"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["zeta", "alpha", "rows"],
        "the report keeps the order"
    );
    let comment = &f.bot_comments(ISSUE)[0].body;
    let zeta = comment.find("| zeta | 1 |").expect(comment);
    let alpha = comment.find("| alpha |").expect(comment);
    assert!(zeta < alpha, "{comment}");
    assert!(
        !comment.contains('\u{202E}'),
        "a bidi override reached the comment"
    );
    assert!(comment.contains("safe\\\\u{202e}exe.txt"), "{comment}");

    // A small result: the output keeps the printed order.
    f.comment(
        "alice",
        "/compute order\n```python\nimport json\nprint(json.dumps({'zeta': 1, 'alpha': 2.5, 'mid': [1]}))\n```",
    );
    let run = f.run(COMMENT, "7202").await;
    assert_eq!(
        run.out("result"),
        r#"{"zeta":1,"alpha":2.5,"mid":[1]}"#,
        "{}",
        run.log()
    );
}

/// Provider and model set, `api_key` empty (a missing secret): exact code
/// runs without a single call to the provider, with the template explanation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_code_without_an_api_key_never_calls_the_provider() {
    let f = fixture().await;
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text("should not be asked"));
    f.comment(
        "alice",
        "/compute total\n```python\nimport json\nprint(json.dumps({'total': 42}))\n```",
    );
    let run = f.run_env(f.env(COMMENT, "7301").model(&llm, "")).await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok", "{}", run.log());
    assert_eq!(llm.requests().len(), 0, "no plan, no explanation call");
    let comment = &f.bot_comments(ISSUE)[0].body;
    assert!(
        comment.contains("ran in the sandbox and returned"),
        "{comment}"
    );
}

/// A key the provider refuses (401): the comment tells the user to set the
/// action's `api_key` input, not the CLI's `COMPUTE_BOT_API_KEY` variable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_names_the_api_key_input() {
    let f = fixture().await;
    let llm = LlmStandin::openai().await;
    llm.push(Reply::unauthorized());
    f.comment("alice", "/compute inputs=data/sales.csv total amount");
    let run = f
        .run_env(f.env(COMMENT, "7302").model(&llm, "sk-wrong-key-0000"))
        .await;
    // A refused key is a configuration error: status `error`, exit 2.
    assert_eq!(run.out("status"), "error", "{}", run.log());
    assert_eq!(run.code, 2, "{}", run.log());
    assert_eq!(llm.requests().len(), 1, "a 401 is not retried");
    let comment = &f.bot_comments(ISSUE)[0].body;
    assert!(
        comment.contains("compute-bot: configuration error"),
        "{comment}"
    );
    assert!(comment.contains("**Status:** error"), "{comment}");
    assert!(
        comment.contains("set the action input \\`api\\_key\\`"),
        "{comment}"
    );
    assert!(
        !comment.contains("set COMPUTE\\_BOT\\_API\\_KEY"),
        "{comment}"
    );
    assert!(!comment.contains("set COMPUTE_BOT_API_KEY"), "{comment}");
    assert!(!comment.contains("sk-wrong-key-0000"), "{comment}");
}

/// An App installation token (also `ghs_…`) posts as the App's bot: with the
/// `bot_login` input its pending code can be approved; without it the bot
/// trusts only `github-actions[bot]` and finds nothing to approve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_token_needs_its_bot_login_to_approve() {
    let f = fixture().await;
    f.gh.set_app_login("compute-app[bot]", "Bot");
    f.comment(
        "alice",
        &format!("/compute inputs=data/sales.csv digest\n```python\n{ESCALATING}```"),
    );
    let run = f.run(COMMENT, "7401").await;
    assert_eq!(run.out("status"), "needs_approval", "{}", run.log());
    f.comment("maint", "/compute approve");
    let run = f.run(COMMENT, "7402").await;
    assert_eq!(run.out("status"), "ignored", "fails closed\n{}", run.log());
    f.comment("maint", "/compute approve");
    let login = f
        .env(COMMENT, "7403")
        .with("INPUT_BOT_LOGIN", "compute-app[bot]");
    let run = f.run_env(login).await;
    assert_eq!(run.out("status"), "ok", "{}", run.log());
    assert_eq!(run.out("code_sha256"), sha256(ESCALATING));
}

/// The token's quota is spent for the next hour and the wait budget is 1 s:
/// the run says "rate limited until <time>" (not a permission problem), and
/// no request goes out after the refused one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_quota_past_the_budget_stops_the_run_without_more_requests() {
    let f = fixture().await;
    f.comment(
        "alice",
        "/compute total\n```python\nimport json\nprint(json.dumps({'total': 42}))\n```",
    );
    f.gh.set_primary_limit(1000, 0, 3600, 403);
    let before = f.gh.requests().len();
    let run = f
        .run_env(f.env(COMMENT, "7501").with("COMPUTE_BOT_GITHUB_WAIT", "1s"))
        .await;
    assert_ne!(run.code, 0, "{}", run.log());
    let sent = f.gh.requests().len() - before;
    assert_eq!(sent, 1, "only the refused request was sent");
    assert!(
        run.summary.contains("rate limited until 20"),
        "{}",
        run.summary
    );
    assert!(!run.summary.contains("permissions:"), "{}", run.summary);
}

/// The quota runs out mid-run and resets 2 s later: the run waits, then
/// posts the result; nothing is sent while the limit holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_running_out_mid_run_is_waited_out_and_the_result_posted() {
    let f = fixture().await;
    let cid = f.comment(
        "alice",
        "/compute total\n```python\nimport json\nprint(json.dumps({'total': 42}))\n```",
    );
    // Permission check and 👀 pass; the tracking comment hits the limit.
    f.gh.set_primary_limit(1000, 2, 2, 403);
    let run = f.run(COMMENT, "7502").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok");
    let seen = f.gh.requests();
    let refused: Vec<usize> = (0..seen.len()).filter(|i| seen[*i].status == 403).collect();
    assert_eq!(
        refused.len(),
        1,
        "{:?}",
        seen.iter()
            .map(|s| (&s.method, &s.path, s.status))
            .collect::<Vec<_>>()
    );
    let next = &seen[refused[0] + 1];
    assert!(
        next.at - seen[refused[0]].at >= std::time::Duration::from_millis(900),
        "the next request waited for the reset"
    );
    snapshot_sandbox_comment("answer_after_rate_limit", &f.bot_comments(ISSUE)[0].body);
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "rocket"]);
}
