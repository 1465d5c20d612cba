//! `/compute approve` and `/compute deny` end to end: the real binary, the
//! GitHub stand-in and the real sandbox (the approved code runs in it).
//! Every comment is a snapshot (`snapshots/`); the answer of the approved
//! run has its sandbox's volatile values (the image, the durations and the
//! memory seen) named (`sandbox_comment_settings`). Each reply is snapshotted alone in
//! `src/github/handlers/approve.rs` too, with the scripted executor.

use crate::support::action_fixture::{
    ActionFixture, COMMENT, ESCALATING, REPO, TOKEN, escalate_policy, fenced, sha256,
    snapshot_comment, snapshot_sandbox_comment,
};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escalated_code_runs_only_when_an_allowed_approver_approves() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    f.policy(&escalate_policy());
    let ask = f.comment(
        "alice",
        &format!(
            "/compute inputs=data/sales.csv total with a digest\n{}",
            fenced(ESCALATING)
        ),
    );
    let run = f.run(COMMENT, "9101").await;
    assert_eq!(
        run.code,
        0,
        "needs_approval does not fail the workflow\n{}",
        run.log()
    );
    assert_eq!(run.out("status"), "needs_approval");
    assert_eq!(run.out("code_sha256"), sha256(ESCALATING));
    assert_eq!(run.out("result"), "null");
    let pending = f.bot_comments(7)[0].clone();
    // The request, with its pending marker naming the code's hash.
    snapshot_comment("escalated_pending", &pending.body);
    assert!(!run.stdout.contains("::stop-commands::"), "nothing ran");
    assert_eq!(f.gh.reactions(ask), vec!["eyes"]);

    // A read-only user cannot approve.
    let fake = f.comment("rita", "/compute approve");
    let run = f.run(COMMENT, "9102").await;
    run.assert_ended(0, "refused");
    assert_eq!(f.gh.reactions(fake), vec!["-1"]);
    snapshot_comment("approve_refused", &f.newest_bot_body(7));
    assert_eq!(
        f.gh.comment(pending.id).unwrap().body,
        pending.body,
        "still open"
    );

    // An approval that names another hash is not carried out, and the request stays open.
    let wrong = f.comment("maint", "/compute approve 00000000");
    let run = f.run(COMMENT, "9105").await;
    run.assert_ended(1, "failed");
    assert_eq!(f.gh.reactions(wrong), vec!["confused"]);
    snapshot_comment("approve_names_other_code", &f.newest_bot_body(7));
    assert_eq!(
        f.gh.comment(pending.id).unwrap().body,
        pending.body,
        "still open"
    );

    // A maintainer approves, naming the hash shown: exactly the shown code runs.
    let ok = f.comment(
        "maint",
        &format!("/compute approve {}", &sha256(ESCALATING)[..12]),
    );
    let run = f.run(COMMENT, "9103").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok");
    assert_eq!(run.out("code_sha256"), sha256(ESCALATING));
    let result: Value = serde_json::from_str(run.out("result")).unwrap();
    assert_eq!(result["total"], 42);
    assert_eq!(result["digest"], "2d711642");
    assert_eq!(f.gh.reactions(ok), vec!["eyes", "rocket"]);
    let closed = f.gh.comment(pending.id).unwrap().body;
    assert!(
        closed.starts_with(&pending.body),
        "the request as shown, closed"
    );
    snapshot_comment("approved_closed", &closed);
    let answer = f.bot_comments(7).last().unwrap().clone();
    // The answer of run 9103: approved by @maint, the executed code shown.
    snapshot_sandbox_comment("approved_answer", &answer.body);
    assert_eq!(f.report(&run)["code"], ESCALATING);

    // The request is closed: approving again runs nothing.
    let again = f.comment("maint", "/compute approve");
    let run = f.run(COMMENT, "9104").await;
    run.assert_ended(0, "ignored");
    snapshot_comment("approve_nothing_pending", &f.newest_bot_body(7));
    assert_eq!(f.gh.reactions(again), vec!["confused"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_closes_the_request_and_tampered_code_is_not_approved() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    f.policy(&escalate_policy());
    f.comment(
        "alice",
        &format!(
            "/compute inputs=data/sales.csv digest\n{}",
            fenced(ESCALATING)
        ),
    );
    let run = f.run(COMMENT, "9201").await;
    assert_eq!(run.out("status"), "needs_approval", "{}", run.log());
    let pending = f.bot_comments(7)[0].clone();

    // Someone edits the bot's comment to swap the code: the hash no longer matches.
    let tampered = pending
        .body
        .replace("hashlib.sha256(b\"x\")", "hashlib.md5(b\"x\")");
    assert_ne!(tampered, pending.body);
    assert!(patch_comment(&f, pending.id, &tampered).await);
    f.comment("maint", "/compute approve");
    let run = f.run(COMMENT, "9202").await;
    run.assert_ended(1, "failed");
    snapshot_comment("approve_tampered", &f.newest_bot_body(7));
    assert!(!run.stdout.contains("::stop-commands::"), "nothing ran");

    // A consistent swap (code and hash marker both rewritten) passes the hash
    // check, but not an approval that names the hash the approver read.
    let swapped_code = ESCALATING.replace("hashlib.sha256(b\"x\")", "hashlib.md5(b\"x\")");
    let swapped = pending
        .body
        .replace(ESCALATING, &swapped_code)
        .replace(&sha256(ESCALATING), &sha256(&swapped_code));
    assert!(swapped.contains(&sha256(&swapped_code)) && swapped.contains("md5"));
    assert!(patch_comment(&f, pending.id, &swapped).await);
    let a = f.comment(
        "maint",
        &format!("/compute approve {}", &sha256(ESCALATING)[..12]),
    );
    let run = f.run(COMMENT, "9204").await;
    run.assert_ended(1, "failed");
    assert_eq!(f.gh.reactions(a), vec!["confused"]);
    assert!(!run.stdout.contains("::stop-commands::"), "nothing ran");
    assert_eq!(
        f.gh.comment(pending.id).unwrap().body,
        swapped,
        "still open"
    );

    // Deny closes it.
    let d = f.comment("maint", "/compute deny");
    let run = f.run(COMMENT, "9203").await;
    run.assert_ended(0, "denied");
    assert_eq!(f.gh.reactions(d), vec!["+1"]);
    let closed = f.gh.comment(pending.id).unwrap().body;
    assert!(
        closed.starts_with(&swapped),
        "the request as it stood, closed"
    );
    snapshot_comment("denied_closed", &closed);
}

/// Edits a comment through the stand-in's REST API (as a maintainer could on the web).
async fn patch_comment(f: &ActionFixture, id: u64, body: &str) -> bool {
    let url = format!("{}/repos/{REPO}/issues/comments/{id}", f.gh.uri());
    reqwest::Client::new()
        .patch(url)
        .bearer_auth(TOKEN)
        .json(&json!({ "body": body }))
        .send()
        .await
        .map(|r| r.status().is_success())
        .unwrap_or(false)
}
