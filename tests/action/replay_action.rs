//! `/compute replay` in a thread, end to end: the real binary as the
//! action, the stateful GitHub stand-in and the real sandbox. The newest
//! result in the thread is replayed and the verdict posted: reproduced, a
//! changed input named, a non-reproducible result shown as `differs`, and
//! only people who may run code may replay.

use crate::support::github_standin::{DEFAULT_APP_LOGIN, GitHubStandIn, StoredComment};

const REPO: &str = "octo-org/data";
const TOKEN: &str = "ghs_standin_token_replay";
const CSV: &str = "region,amount\nnorth,10\nsouth,32\n";
const CODE: &str = "import json, csv\nrows = list(csv.DictReader(open('/data/sales.csv')))\nprint(json.dumps({'total': sum(int(r['amount']) for r in rows)}))\n";

struct Fixture {
    gh: GitHubStandIn,
    dir: tempfile::TempDir,
}

impl Fixture {
    async fn new() -> Fixture {
        let gh = GitHubStandIn::start().await;
        gh.add_repo(REPO);
        gh.add_issue(REPO, 7);
        gh.set_permission(REPO, "alice", "write");
        gh.set_permission(REPO, "rita", "read");
        gh.require_token(TOKEN);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws/data")).unwrap();
        std::fs::write(dir.path().join("ws/data/sales.csv"), CSV).unwrap();
        Fixture { gh, dir }
    }

    /// Seeds a comment by `author`, runs the action on its event, returns
    /// the exit status and the bot's newest comment.
    async fn comment(
        &self,
        author: &str,
        body: &str,
        run_id: &str,
    ) -> (i32, StoredComment, String) {
        let id = self.gh.seed_comment(REPO, 7, author, body);
        let event = self.dir.path().join("event.json");
        std::fs::write(
            &event,
            serde_json::to_vec(&self.gh.issue_comment_event(id, "created")).unwrap(),
        )
        .unwrap();
        let ws = self.dir.path().join("ws");
        let env = crate::support::action_env(
            "issue_comment",
            &event,
            REPO,
            &self.gh.uri(),
            run_id,
            &ws,
            TOKEN,
        );
        let run = crate::support::run_action(&env, self.dir.path(), &ws).await;
        let newest = self
            .gh
            .comments(REPO, 7)
            .into_iter()
            .filter(|c| c.author == DEFAULT_APP_LOGIN)
            .max_by_key(|c| c.id)
            .expect("the bot answered");
        (run.code, newest, run.log())
    }
}

fn ask(code: &str) -> String {
    format!("/compute inputs=data/sales.csv total amount\n```python\n{code}```\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compute_replay_posts_the_verdict_for_the_newest_result() {
    let f = Fixture::new().await;
    let (code, result, log) = f.comment("alice", &ask(CODE), "100").await;
    assert_eq!(code, 0, "{log}");
    assert!(
        result.body.contains("<!-- compute-bot:record {"),
        "{}",
        result.body
    );
    assert!(result.body.contains("**Reproduce:**"), "{}", result.body);
    assert!(result.body.contains("`/compute replay`"), "{}", result.body);

    let (code, verdict, log) = f.comment("alice", "/compute replay", "101").await;
    assert_eq!(code, 0, "{log}");
    assert!(
        verdict.body.contains("✅ compute-bot: reproduced"),
        "{}",
        verdict.body
    );
    assert!(
        verdict.body.contains(&format!(
            "https://github.example/octo-org/data/issues/7#issuecomment-{}",
            result.id
        )),
        "{}",
        verdict.body
    );
    // The verdict carries no record: the next replay still finds the result.
    assert!(!verdict.body.contains("compute-bot:record"));

    // Someone who may not run code may not replay either.
    let (_, refused, _) = f.comment("rita", "/compute replay", "102").await;
    assert!(!refused.body.contains("reproduced"), "{}", refused.body);
    assert!(refused.body.contains("rita"), "{}", refused.body);

    // One changed byte in the input: named, nothing run.
    let ws_csv = f.dir.path().join("ws/data/sales.csv");
    std::fs::write(&ws_csv, CSV.replace("32", "33")).unwrap();
    let (code, cannot, log) = f.comment("alice", "/compute replay", "103").await;
    assert_eq!(code, 1, "{log}");
    assert!(cannot.body.contains("cannot replay"), "{}", cannot.body);
    assert!(cannot.body.contains("input `sales.csv`"), "{}", cannot.body);
    std::fs::write(&ws_csv, CSV).unwrap();

    // A forged record (a bot comment edited to name a file outside the
    // checkout) reads nothing there and reveals nothing about it.
    let secret = "not for the sandbox\n";
    std::fs::write(f.dir.path().join("outside.csv"), secret).unwrap();
    let forged = result
        .body
        .replace(r#""path":"data/sales.csv""#, r#""path":"../outside.csv""#);
    assert_ne!(forged, result.body);
    f.gh.seed_comment(REPO, 7, DEFAULT_APP_LOGIN, &forged);
    let (code, refused, log) = f.comment("alice", "/compute replay", "106").await;
    assert_eq!(code, 1, "{log}");
    assert!(refused.body.contains("cannot replay"), "{}", refused.body);
    assert!(refused.body.contains("../outside.csv"), "{}", refused.body);
    assert!(
        refused
            .body
            .contains("not a path inside the repository checkout"),
        "{}",
        refused.body
    );
    assert!(
        !refused
            .body
            .contains(&compute_bot::sandbox::sha256_hex(secret.as_bytes()))
    );

    // A result that is not reproducible replays as `differs`, with the diff.
    let random = "import json, random\nprint(json.dumps({'total': random.random()}))\n";
    let (code, _, log) = f.comment("alice", &ask(random), "104").await;
    assert_eq!(code, 0, "{log}");
    let (code, differs, log) = f.comment("alice", "/compute replay", "105").await;
    assert_eq!(code, 1, "{log}");
    assert!(
        differs.body.contains("⚠️ compute-bot: differs"),
        "{}",
        differs.body
    );
    assert!(differs.body.contains("/total: "), "{}", differs.body);
}
