//! `/compute plan` and `/compute run` (issue 19): the plan is posted with
//! its code, verdict and sha256 and nothing runs; `/compute run` runs
//! exactly the newest plan's code, and only from the bot's own, unedited
//! plan comment. Against the GitHub and model stand-ins and the real sandbox.

use crate::support::action_fixture::{
    ActionFixture, COMMENT, REPO, fenced, sha256, snapshot_comment, snapshot_sandbox_comment,
};
use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Reply};
use serde_json::{Value, json};

const CODE: &str = "import json\nimport pandas as pd\ndf = pd.read_csv('/data/sales.csv')\nprint(json.dumps({'rows': len(df)}))\n";
const OTHER: &str = "import json\nprint(json.dumps({'rows': 999}))\n";

/// A fixture with a plan of [`CODE`] posted by the bot; returns the plan comment's id.
async fn planned(f: &ActionFixture, llm: &LlmStandin) -> u64 {
    llm.push(Reply::code("Read the CSV and count its rows.", CODE));
    let cid = f.comment(
        "alice",
        "/compute plan inputs=data/sales.csv how many rows are there?",
    );
    let run = f
        .run_env(f.env(COMMENT, "9201").model(llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "planned");
    assert_eq!(run.out("code_sha256"), sha256(CODE));
    assert_eq!(run.out("result"), "null");
    assert_eq!(f.gh.reactions(cid), vec!["eyes"]);
    let plans = f.bot_comments(7);
    assert_eq!(plans.len(), 1, "one new comment, no tracking comment");
    let plan = &plans[0];
    assert_eq!(plan.edits, 0, "the plan comment is never edited");
    // The model's plan, the exact code with its hash, the verdict
    // (**allow**) and how to run it (`/compute run`).
    snapshot_comment("plan_from_model", &plan.body);
    let report = f.report(&run);
    assert!(report["outcome"].is_null() && report["record"].is_null());
    assert_eq!(report["status"], "planned");
    assert_eq!(llm.served(), 1, "a plan asks for code only");
    plan.id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_runs_exactly_the_newest_plans_code() {
    let f = ActionFixture::new().await;
    let llm = LlmStandin::openai().await;
    let plan_id = planned(&f, &llm).await;
    llm.push(Reply::text("There are two rows."));
    let cid = f.comment("alice", "/compute run");
    let run = f
        .run_env(f.env(COMMENT, "9202").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok");
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"rows": 2})
    );
    assert_eq!(run.out("code_sha256"), sha256(CODE));
    assert_eq!(
        llm.served(),
        2,
        "the code is not regenerated: only the explanation"
    );
    let answer = f.bot_comments(7).pop().unwrap();
    // The answer runs the plan, and links it.
    snapshot_sandbox_comment("plan_run_answer", &answer.body);
    assert!(
        answer.body.contains(&format!("issuecomment-{plan_id}")),
        "the link names the plan's own id, not the snapshot's number"
    );
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "rocket"]);
    // The plan's inputs were used (recorded with their paths).
    let report = f.report(&run);
    assert_eq!(report["record"]["inputs"][0]["path"], "data/sales.csv");
    // With the hash prefix of another plan, nothing runs.
    f.comment("alice", &format!("/compute run {}", &sha256(OTHER)[..12]));
    let run = f.run(COMMENT, "9203").await;
    assert_eq!(run.out("status"), "failed", "{}", run.log());
    let reply = f.bot_comments(7).pop().unwrap();
    snapshot_comment("plan_other_hash", &reply.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_plan_or_someone_elses_plan_marker_never_runs() {
    let f = ActionFixture::builder()
        .permission("mallory", "write")
        .start()
        .await;
    let llm = LlmStandin::openai().await;
    let plan_id = planned(&f, &llm).await;
    let original = f.gh.comment(plan_id).unwrap().body;

    // Someone else posts a comment shaped like a plan, with a valid hash:
    // it is not the bot's, so the bot's plan still runs.
    let fake = original
        .replace(CODE, OTHER)
        .replace(&sha256(CODE), &sha256(OTHER));
    f.gh.seed_comment(REPO, 7, "mallory", &fake);
    llm.push(Reply::text("Two rows."));
    f.comment("alice", "/compute run");
    let run = f
        .run_env(f.env(COMMENT, "9204").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.out("status"), "ok", "{}", run.log());
    assert_eq!(run.out("code_sha256"), sha256(CODE));
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"rows": 2})
    );

    // The code of the bot's plan changed in the same second, the marker
    // not: the hash no longer matches.
    f.gh.edit_comment_later(plan_id, &original.replace("len(df)", "999"), 0);
    f.comment("alice", "/compute run");
    let run = f.run(COMMENT, "9205").await;
    assert_eq!(run.out("status"), "failed", "{}", run.log());
    assert_eq!(run.out("code_sha256"), "", "nothing ran");
    let reply = f.bot_comments(7).pop().unwrap();
    snapshot_comment("plan_hash_mismatch", &reply.body);

    // Code and marker changed together, later: the edit itself refuses it.
    f.gh.edit_comment_later(plan_id, &fake, 30);
    f.comment("alice", "/compute run");
    let run = f.run(COMMENT, "9206").await;
    assert_eq!(run.out("status"), "failed", "{}", run.log());
    assert_eq!(run.out("code_sha256"), "", "nothing ran");
    let reply = f.bot_comments(7).pop().unwrap();
    snapshot_comment("plan_edited", &reply.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_needs_the_run_permission_and_a_plan() {
    let f = ActionFixture::new().await;
    // No plan in the thread.
    f.comment("alice", "/compute run");
    let run = f.run(COMMENT, "9207").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ignored");
    snapshot_comment("plan_none_in_thread", &f.bot_comments(7)[0].body);
    // A plan of exact code needs no model; a reader may not run it.
    f.comment(
        "alice",
        &format!(
            "/compute plan inputs=data/sales.csv count\n{}",
            fenced(CODE)
        ),
    );
    let run = f.run(COMMENT, "9208").await;
    assert_eq!(run.out("status"), "planned", "{}", run.log());
    f.comment("rita", "/compute run");
    let run = f.run(COMMENT, "9209").await;
    assert_eq!(run.out("status"), "refused", "{}", run.log());
    f.comment("alice", &format!("/compute run {}", &sha256(CODE)[..12]));
    let run = f.run(COMMENT, "9210").await;
    assert_eq!(run.out("status"), "ok", "{}", run.log());
    assert_eq!(run.out("code_sha256"), sha256(CODE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalating_plan_shows_its_verdict_and_its_run_waits_for_an_approval() {
    use crate::support::action_fixture::{ESCALATING, escalate_policy};
    let f = ActionFixture::builder()
        .policy(&escalate_policy())
        .start()
        .await;
    f.comment(
        "alice",
        &format!(
            "/compute plan inputs=data/sales.csv digest\n{}",
            fenced(ESCALATING)
        ),
    );
    let run = f.run(COMMENT, "9221").await;
    assert_eq!(run.out("status"), "planned", "{}", run.log());
    let plan = f.bot_comments(7).pop().unwrap();
    // The verdict (**escalate**) names the finding (`hashlib`).
    snapshot_comment("plan_escalating", &plan.body);
    // Running the plan is checked again: it waits for an approval.
    f.comment("alice", "/compute run");
    let run = f.run(COMMENT, "9222").await;
    assert_eq!(run.out("status"), "needs_approval", "{}", run.log());
    assert_eq!(run.out("code_sha256"), sha256(ESCALATING));
    f.comment("maint", "/compute approve");
    let run = f.run(COMMENT, "9223").await;
    assert_eq!(run.out("status"), "ok", "{}", run.log());
    assert_eq!(run.out("code_sha256"), sha256(ESCALATING));
}

/// `/compute plan` with exact code (a fenced block) starts nothing: no
/// container while GitHub answers the permission request, none after.
/// Read back from the engine's event log by the bot process's label.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_of_exact_code_prepares_no_container() {
    let f = ActionFixture::new().await;
    let cid = f.comment(
        "alice",
        &format!(
            "/compute plan inputs=data/sales.csv count the rows\n{}",
            fenced(CODE)
        ),
    );
    let run = f.run(COMMENT, "9210").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "planned", "{}", run.log());
    assert_eq!(run.out("code_sha256"), sha256(CODE));
    assert_eq!(f.gh.reactions(cid), vec!["eyes"]);
    assert_eq!(
        run.containers_created(),
        0,
        "a plan runs nothing, not even a container prepared ahead\n{}",
        run.log()
    );
    // The same comment as a run does start one: the count can see it.
    f.comment(
        "alice",
        &format!(
            "/compute inputs=data/sales.csv count the rows\n{}",
            fenced(CODE)
        ),
    );
    let run = f.run(COMMENT, "9211").await;
    assert_eq!(run.out("status"), "ok", "{}", run.log());
    assert_eq!(run.containers_created(), 1, "{}", run.log());
}
