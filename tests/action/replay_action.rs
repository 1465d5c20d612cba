//! `/compute replay` in a thread, end to end: the real binary as the
//! action, the stateful GitHub stand-in and the real sandbox. The newest
//! result in the thread is replayed and the verdict posted: reproduced, a
//! changed input named, a non-reproducible result shown as `differs`, and
//! only people who may run code may replay.

use crate::support::action_fixture::{
    ActionFixture, COMMENT, CSV, ISSUE, REPO, snapshot_comment, snapshot_sandbox_comment,
};
use crate::support::github_standin::{DEFAULT_APP_LOGIN, StoredComment};

const CODE: &str = "import json, csv\nrows = list(csv.DictReader(open('/data/sales.csv')))\nprint(json.dumps({'total': sum(int(r['amount']) for r in rows)}))\n";

/// Comments as `author`, runs the action on it; the exit status, the bot's
/// newest comment and the log.
async fn comment(
    f: &ActionFixture,
    author: &str,
    body: &str,
    run_id: &str,
) -> (i32, StoredComment, String) {
    f.comment(author, body);
    let run = f.run(COMMENT, run_id).await;
    let newest = f
        .bot_comments(ISSUE)
        .into_iter()
        .max_by_key(|c| c.id)
        .expect("the bot answered");
    (run.code, newest, run.log())
}

fn ask(code: &str) -> String {
    format!("/compute inputs=data/sales.csv total amount\n```python\n{code}```\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compute_replay_posts_the_verdict_for_the_newest_result() {
    let f = ActionFixture::new().await;
    let (code, result, log) = comment(&f, "alice", &ask(CODE), "100").await;
    assert_eq!(code, 0, "{log}");
    // The answer carries its record and says how to reproduce it.
    snapshot_sandbox_comment("replay_result", &result.body);

    let (code, verdict, log) = comment(&f, "alice", "/compute replay", "101").await;
    assert_eq!(code, 0, "{log}");
    // Reproduced, linking the result it replayed.
    snapshot_sandbox_comment("replay_reproduced", &verdict.body);
    assert!(
        verdict.body.contains(&format!(
            "https://github.example/octo-org/data/issues/7#issuecomment-{}",
            result.id
        )),
        "the link names the result's own id, not the snapshot's number"
    );
    // The verdict carries no record: the next replay still finds the result.
    assert!(!verdict.body.contains("compute-bot:record"));

    // Someone who may not run code may not replay either.
    let (_, refused, _) = comment(&f, "rita", "/compute replay", "102").await;
    assert!(!refused.body.contains("reproduced"), "{}", refused.body);
    snapshot_comment("replay_refused", &refused.body);

    // One changed byte in the input: named, nothing run.
    let ws_csv = f.ws().join("data/sales.csv");
    std::fs::write(&ws_csv, CSV.replace("32", "33")).unwrap();
    let (code, cannot, log) = comment(&f, "alice", "/compute replay", "103").await;
    assert_eq!(code, 1, "{log}");
    snapshot_sandbox_comment("replay_input_changed", &cannot.body);
    std::fs::write(&ws_csv, CSV).unwrap();

    // A forged record (a bot comment edited to name a file outside the
    // checkout) reads nothing there and reveals nothing about it.
    let secret = "not for the sandbox\n";
    std::fs::write(f.root().join("outside.csv"), secret).unwrap();
    let forged = result
        .body
        .replace(r#""path":"data/sales.csv""#, r#""path":"../outside.csv""#);
    assert_ne!(forged, result.body);
    f.gh.seed_comment(REPO, ISSUE, DEFAULT_APP_LOGIN, &forged);
    let (code, refused, log) = comment(&f, "alice", "/compute replay", "106").await;
    assert_eq!(code, 1, "{log}");
    snapshot_sandbox_comment("replay_forged_path", &refused.body);
    assert!(
        !refused
            .body
            .contains(&compute_bot::sandbox::sha256_hex(secret.as_bytes()))
    );

    // A result that is not reproducible replays as `differs`, with the diff.
    let random = "import json, random\nprint(json.dumps({'total': random.random()}))\n";
    let (code, _, log) = comment(&f, "alice", &ask(random), "104").await;
    assert_eq!(code, 0, "{log}");
    let (code, differs, log) = comment(&f, "alice", "/compute replay", "105").await;
    assert_eq!(code, 1, "{log}");
    assert!(
        differs.body.contains("⚠️ compute-bot: differs"),
        "{}",
        differs.body
    );
    // Not a snapshot: the diff shows two random numbers.
    assert!(differs.body.contains("/total: "), "{}", differs.body);
}
