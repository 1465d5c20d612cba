//! Watches (`.github/compute/*.yml`) in the Action, end to end: the real
//! binary, the GitHub stand-in (comments, files per ref, pull requests and
//! their files) and the real sandbox.

use crate::support::action_fixture::{
    ActionFixture, REPO, sha256, snapshot_comment, snapshot_sandbox_comment,
};
use crate::support::git_store::Change;
use crate::support::github_standin::DEFAULT_APP_LOGIN;
use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Reply};
use serde_json::json;

/// The watch's code: the total and the row count of `data/sales.csv`.
const CODE: &str = "import json\nimport pandas as pd\ndf = pd.read_csv(\"/data/sales.csv\")\nprint(json.dumps({\"total\": int(df[\"amount\"].sum()), \"rows\": len(df)}))\n";
/// Code a pull request might put in the watch file instead.
const EVIL_CODE: &str = "import json\nprint(json.dumps({\"total\": 999, \"rows\": 0}))\n";
/// The sales data with a total of `total` over two rows.
fn csv(total: u32) -> String {
    format!("region,amount\nnorth,10\nsouth,{}\n", total - 10)
}

/// A watch file with `code`: total below 100, 5 % tolerance, sticky on #7.
fn watch_file(code: &str) -> String {
    let body: String = code.lines().map(|l| format!("  {l}\n")).collect();
    format!(
        "name: sales\ncode: |\n{body}inputs: [data/sales.csv]\nschema: {{type: object, required: [total]}}\nchecks:\n  - result[\"total\"] < 100\ntolerance: 0.05\nissue: 7\n"
    )
}

async fn scheduled(f: &ActionFixture, run_id: &str) -> crate::support::ActionRun {
    f.write_event(&json!({"schedule": "0 6 * * 1"}));
    f.run("schedule", run_id).await
}

fn set_total(f: &ActionFixture, total: u32) {
    std::fs::write(f.ws().join("data/sales.csv"), csv(total)).unwrap();
}

/// History rows in a sticky comment (`| 2026-01-01 06:00 | ...`).
fn history_rows(body: &str) -> usize {
    body.lines()
        .filter(|l| {
            l.len() > 6 && l.starts_with("| ") && l[2..6].chars().all(|c| c.is_ascii_digit())
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_watch_keeps_one_sticky_comment_and_speaks_only_on_change() {
    let f = ActionFixture::builder()
        .file(".github/compute/sales.yml", watch_file(CODE))
        .start()
        .await;

    // First run: the sticky comment, nothing else.
    let run = scheduled(&f, "9101").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok");
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1, "{bots:?}");
    let sticky = &bots[0];
    // The watch's marker, ✅ and the total (42).
    snapshot_sandbox_comment("watch_sticky_first", &sticky.body);
    assert_eq!(history_rows(&sticky.body), 1, "{}", sticky.body);
    assert!(run.summary.contains("watch `sales`") && run.summary.contains("42"));
    let result: serde_json::Value = serde_json::from_str(run.out("result")).unwrap();
    assert_eq!(result["sales"]["total"], json!(42));
    // The run record for replay.
    let report = f.report(&run);
    assert_eq!(report["code"], json!(CODE));
    assert!(report["record"].is_object(), "{report}");
    // ... which `compute-bot replay` reproduces.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_compute-bot"))
        .arg("replay")
        .arg(f.ws().join(run.out("report_path")))
        .arg("--workspace")
        .arg(f.ws())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(said.contains("reproduced"), "{said}");

    // Unchanged data: zero new comments, the sticky one edited in place.
    let posts = f.gh.count("POST", "/issues/7/comments");
    let edits = f.gh.count("PATCH", "/issues/comments/");
    let run = scheduled(&f, "9102").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1, "{bots:?}");
    assert_eq!(f.gh.count("POST", "/issues/7/comments"), posts);
    assert_eq!(f.gh.count("PATCH", "/issues/comments/"), edits + 1);
    assert_eq!(bots[0].id, sticky.id);
    assert_eq!(history_rows(&bots[0].body), 2, "{}", bots[0].body);
    // The chart of the two runs (`line [42, 42]`).
    snapshot_sandbox_comment("watch_sticky_unchanged", &bots[0].body);

    // A change within the tolerance (42 → 43, 2.4 %): still no new comment.
    set_total(&f, 43);
    let run = scheduled(&f, "9103").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1, "{bots:?}");
    assert_eq!(history_rows(&bots[0].body), 3);
    // The total (43), and no value moved by more than the tolerance.
    snapshot_sandbox_comment("watch_sticky_within_tolerance", &bots[0].body);

    // Beyond the tolerance (43 → 60): one short notification linking the sticky one.
    set_total(&f, 60);
    let run = scheduled(&f, "9104").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 2, "{bots:?}");
    let note = &bots[1].body;
    // The change (`/total 43 → 60`) and a link to the sticky comment.
    snapshot_comment("watch_beyond_tolerance_note", note);
    assert!(
        note.contains(&format!("#issuecomment-{}", sticky.id)),
        "the link names the sticky comment's own id, not the snapshot's number"
    );
    assert!(!note.contains("compute-bot:watch="), "{note}");
    // The sticky comment reads like an answer: status, conclusion, values,
    // chart, history, then the details folded.
    let body = &bots[0].body;
    let at = |part: &str| {
        body.find(part)
            .unwrap_or_else(|| panic!("{part:?} in {body}"))
    };
    let order = [
        at("**Status:** ok · the check passes"),
        at("Since the previous run"),
        at("| /total | 60 | +17 (+39.53 %) |"),
        at("```mermaid"),
        at("**History**"),
        at("<details><summary>Watch file, checks and code"),
    ];
    assert!(order.is_sorted(), "{order:?}\n{body}");

    // A failing check fails the job, names the watch and the check, and notifies once.
    set_total(&f, 150);
    let run = scheduled(&f, "9105").await;
    assert_eq!(run.code, 1, "{}", run.log());
    assert_eq!(run.out("status"), "failed");
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("::error title=compute-bot watch sales::")
                && l.contains("result[\"total\"] < 100")),
        "{}",
        run.log()
    );
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 3, "{bots:?}");
    snapshot_comment("watch_started_failing_note", &bots[2].body);
    // ❌ and the total (150).
    snapshot_sandbox_comment("watch_sticky_failing", &bots[0].body);

    // Still failing, same data: the job fails again, nothing new is posted.
    let run = scheduled(&f, "9106").await;
    assert_eq!(run.code, 1, "{}", run.log());
    assert_eq!(f.bot_comments(7).len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_marker_is_not_the_sticky_comment_and_broken_watch_files_are_named() {
    let f = ActionFixture::builder()
        .file(".github/compute/sales.yml", watch_file(CODE))
        .start()
        .await;
    // Someone else's comment with the marker and a forged history.
    f.gh.seed_comment(
        REPO,
        7,
        "alice",
        "<!-- compute-bot:watch=sales -->\n<!-- compute-bot:watch-state=7b7d -->",
    );
    let run = scheduled(&f, "9111").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1);
    assert_eq!(history_rows(&bots[0].body), 1);

    // A typo in a watch file: exit 2 and an annotation at the line.
    std::fs::write(
        f.ws().join(".github/compute/broken.yml"),
        "name: broken\ncode: print(1)\ntolerence: 0.1\n",
    )
    .unwrap();
    let run = scheduled(&f, "9112").await;
    assert_eq!(run.code, 2, "{}", run.log());
    assert!(
        run.stdout.lines().any(|l| l.starts_with(
            "::error file=.github/compute/broken.yml,line=3,col=1,title=compute-bot watch file::"
        )),
        "{}",
        run.log()
    );
    assert_eq!(f.bot_comments(7).len(), 1);
}

/// `main` with the data and the watch file, as the base of pull requests.
fn seed_main(f: &ActionFixture) {
    f.gh.seed_branch(
        REPO,
        "main",
        &[
            ("data/sales.csv", csv(42).as_bytes()),
            (".github/compute/sales.yml", watch_file(CODE).as_bytes()),
            ("README.md", b"# data\n"),
        ],
    );
}

fn bot_comments_on(f: &ActionFixture, n: u64) -> Vec<String> {
    f.gh.comments(REPO, n)
        .into_iter()
        .filter(|c| c.author == DEFAULT_APP_LOGIN)
        .map(|c| c.body)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_changing_a_watched_input_gets_before_and_after_from_the_base_code() {
    let f = ActionFixture::new().await;
    seed_main(&f);
    // The pull request changes the data AND the watch's code: the base's code runs.
    f.gh.open_pull_request(
        REPO,
        21,
        "main",
        "more-sales",
        &[
            Change::put("data/sales.csv", csv(60)),
            Change::put(".github/compute/sales.yml", watch_file(EVIL_CODE)),
        ],
    );
    f.write_event(&f.gh.pull_request_event(REPO, 21, "opened"));
    let run = f.run("pull_request", "9121").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let comments = bot_comments_on(&f, 21);
    assert_eq!(comments.len(), 1, "{comments:?}");
    let c = &comments[0];
    assert!(c.contains("<!-- compute-bot:watch-pr -->"));
    assert!(c.contains("| /total | 42 | 60 | +18 (+42.86 %) |"), "{c}");
    assert!(c.contains("| /rows | 2 | 2 | no change |"), "{c}");
    // `| 999 |`, not `999`: the short commit hashes in the comment may hold it.
    assert!(!c.contains("| 999 |"), "the pull request's code ran: {c}");
    assert!(c.contains("✅"), "{c}");
    assert!(run.summary.contains("| /total | 42 | 60 |"));

    // A push that breaks the check: the comment is edited, the job fails.
    f.gh.push_to_pull_request(REPO, 21, &[Change::put("data/sales.csv", csv(150))]);
    f.write_event(&f.gh.pull_request_event(REPO, 21, "synchronize"));
    let run = f.run("pull_request", "9122").await;
    assert_eq!(run.code, 1, "{}", run.log());
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("::error title=compute-bot watch sales::")
                && l.contains("on the head")),
        "{}",
        run.log()
    );
    let comments = bot_comments_on(&f, 21);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0].contains("| /total | 42 | 150 |"),
        "{}",
        comments[0]
    );
    assert!(comments[0].contains("❌"), "{}", comments[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_requests_touching_nothing_watched_get_nothing_and_forks_get_the_summary() {
    let f = ActionFixture::new().await;
    seed_main(&f);
    f.gh.open_pull_request(
        REPO,
        22,
        "main",
        "docs",
        &[Change::put("README.md", "# data, documented\n")],
    );
    f.write_event(&f.gh.pull_request_event(REPO, 22, "opened"));
    let run = f.run("pull_request", "9131").await;
    assert_eq!(
        (run.code, run.out("status")),
        (0, "ignored"),
        "{}",
        run.log()
    );
    assert!(bot_comments_on(&f, 22).is_empty());
    assert_eq!(f.gh.count("POST", "/comments"), 0);

    // A fork's pull request: read-only token, no write attempted; the
    // summary and the exit status carry the answer.
    f.gh.open_fork_pull_request(
        REPO,
        23,
        "mallory/data",
        "main",
        "patch",
        &[Change::put("data/sales.csv", csv(150))],
    );
    f.gh.set_token_access(crate::support::action_fixture::TOKEN, "read", "read");
    f.write_event(&f.gh.pull_request_event(REPO, 23, "opened"));
    let run = f.run("pull_request", "9132").await;
    assert_eq!(run.code, 1, "{}", run.log());
    assert!(bot_comments_on(&f, 23).is_empty());
    assert_eq!(f.gh.count("POST", "/comments"), 0);
    assert_eq!(f.gh.count("PATCH", "/comments"), 0);
    assert!(
        run.summary.contains("| /total | 42 | 150 |"),
        "{}",
        run.summary
    );

    // A same-repository pull request whose token may not comment (403): a
    // warning, and the summary and the exit status carry the answer.
    f.gh.set_token_access(crate::support::action_fixture::TOKEN, "write", "write");
    f.gh.open_pull_request(
        REPO,
        24,
        "main",
        "more",
        &[Change::put("data/sales.csv", csv(50))],
    );
    f.gh.fail_next(Some("POST"), "/issues/24/comments", 403, 5);
    f.write_event(&f.gh.pull_request_event(REPO, 24, "opened"));
    let run = f.run("pull_request", "9133").await;
    assert_eq!((run.code, run.out("status")), (0, "ok"), "{}", run.log());
    assert!(bot_comments_on(&f, 24).is_empty());
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("::warning::") && l.contains("may not comment")),
        "{}",
        run.log()
    );
    assert!(
        run.summary.contains("| /total | 42 | 50 |"),
        "{}",
        run.summary
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_watch_counts_only_the_pinned_code() {
    let yaml = format!(
        "name: sales\ngoal: The total and the rows of data/sales.csv\ncode_sha256: {}\ninputs: [data/sales.csv]\nissue: 7\n",
        sha256(CODE)
    );
    let f = ActionFixture::builder()
        .file(".github/compute/sales.yml", yaml)
        .start()
        .await;
    let llm = LlmStandin::openai().await;
    llm.push(Reply::tool_call("sum the amounts", CODE));
    f.write_event(&json!({"schedule": "0 6 * * 1"}));
    let run = f
        .run_env(f.env("schedule", "9141").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.containers_created(), 1, "{}", run.log());
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1);
    snapshot_sandbox_comment("watch_model_pinned_sticky", &bots[0].body);

    // The model writes other code: it never runs — no container is
    // prepared for it, not even while the model writes — and the job fails.
    llm.push(Reply::tool_call("sum the amounts", EVIL_CODE));
    let run = f
        .run_env(f.env("schedule", "9142").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 1, "{}", run.log());
    assert_eq!(run.containers_created(), 0, "{}", run.log());
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("::error title=compute-bot watch sales::")
                && l.contains("not the pinned")
                && l.contains("it was not run")),
        "{}",
        run.log()
    );
    let report = f.report(&run);
    assert_eq!(
        report["attempts"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert!(report["attempts"][0]["outcome"].is_null(), "{report}");
    assert!(report["outcome"].is_null(), "{report}");
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 2, "{bots:?}");
    assert!(!bots[0].body.contains("999"), "{}", bots[0].body);
    snapshot_comment("watch_model_no_result_note", &bots[1].body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compute_watch_under_an_answer_posts_a_watch_file_that_runs() {
    let f = ActionFixture::new().await;
    f.comment(
        "alice",
        &format!(
            "/compute inputs=data/sales.csv total\n{}",
            crate::support::action_fixture::fenced(CODE)
        ),
    );
    let run = f.run(crate::support::action_fixture::COMMENT, "9151").await;
    assert_eq!(run.code, 0, "{}", run.log());

    // Someone who may not run code gets no watch file.
    f.comment("rita", "/compute watch sales");
    let run = f.run(crate::support::action_fixture::COMMENT, "9152").await;
    assert_eq!(run.out("status"), "refused", "{}", run.log());

    f.comment("alice", "/compute watch sales");
    let run = f.run(crate::support::action_fixture::COMMENT, "9153").await;
    assert_eq!((run.code, run.out("status")), (0, "ok"), "{}", run.log());
    let reply = f.bot_comments(7).last().unwrap().body.clone();
    let yaml: String = reply
        .split("```yaml\n")
        .nth(1)
        .and_then(|r| r.split("\n```").next())
        .unwrap_or_else(|| panic!("no yaml block: {reply}"))
        .to_string();
    let w = compute_bot::watch_spec::Watch::parse(&yaml, "sales.yml").unwrap();
    assert_eq!(w.code.as_deref(), Some(CODE));
    assert_eq!(w.code_sha256.as_deref(), Some(sha256(CODE).as_str()));
    assert_eq!(w.inputs, vec!["data/sales.csv"]);
    assert_eq!(w.issue, Some(7));

    // Committed as it is, it runs on the schedule and keeps its comment.
    std::fs::create_dir_all(f.ws().join(".github/compute")).unwrap();
    std::fs::write(f.ws().join(".github/compute/sales.yml"), &yaml).unwrap();
    let before = f.bot_comments(7).len();
    let run = scheduled(&f, "9154").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), before + 1);
    snapshot_sandbox_comment("watch_from_answer_sticky", &bots.last().unwrap().body);

    // No result in the thread: a short answer, nothing else.
    f.gh.add_issue(REPO, 30);
    f.comment_on(30, "alice", "/compute watch sales", "created");
    let run = f.run(crate::support::action_fixture::COMMENT, "9155").await;
    assert_eq!(run.out("status"), "ignored", "{}", run.log());
    let c = bot_comments_on(&f, 30);
    assert_eq!(c.len(), 1);
    snapshot_comment("watch_no_result_in_thread", &c[0]);
}

/// The history in a sticky comment's state marker.
fn history(body: &str) -> Vec<serde_json::Value> {
    let start = "<!-- compute-bot:watch-state=";
    let hex_json = body
        .split(start)
        .nth(1)
        .and_then(|r| r.split(" -->").next())
        .unwrap_or_else(|| panic!("no state marker: {body}"));
    let state: serde_json::Value =
        serde_json::from_slice(&hex::decode(hex_json.trim()).unwrap()).unwrap();
    state["history"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_run_of_a_workflow_run_replaces_its_own_history_row() {
    let f = ActionFixture::builder()
        .file(".github/compute/sales.yml", watch_file(CODE))
        .start()
        .await;
    let run = scheduled(&f, "9161").await;
    assert_eq!(run.code, 0, "{}", run.log());

    // "Re-run jobs": the same run id, attempt 2, on changed data.
    set_total(&f, 50);
    f.write_event(&json!({"schedule": "0 6 * * 1"}));
    let run = f
        .run_env(f.env("schedule", "9161").with("GITHUB_RUN_ATTEMPT", "2"))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    let sticky = f.bot_comments(7)[0].body.clone();
    assert_eq!(history_rows(&sticky), 1, "{sticky}");
    let h = history(&sticky);
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0]["values"]["/total"], json!(50), "{h:?}");
    assert_eq!(
        (h[0]["run_id"].as_str(), h[0]["attempt"].as_u64()),
        (Some("9161"), Some(2))
    );
    assert!(
        !sticky.contains("| 42 |"),
        "attempt 1's row is left: {sticky}"
    );

    // Another workflow run adds its own row.
    let run = scheduled(&f, "9162").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let sticky = f.bot_comments(7)[0].body.clone();
    assert_eq!(history_rows(&sticky), 2, "{sticky}");
    let runs: Vec<String> = history(&sticky)
        .iter()
        .map(|e| e["run_id"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(runs, ["9161", "9162"]);
}
