//! End-to-end tests of `compute-bot action`: the real binary as a process,
//! with the Actions environment set, `GITHUB_API_URL` pointing at the
//! stateful GitHub stand-in, real-shaped event payloads, and the real sandbox.

use crate::support::ActionRun as Run;
use crate::support::action_fixture::{
    ActionFixture, COMMENT, REPO, TOKEN, fenced, sha256, snapshot_comment, snapshot_sandbox_comment,
};
use crate::support::llm_standin::{CANARY_KEY, DEFAULT_MODEL, LlmStandin, Reply};
use serde_json::{Value, json};

/// Exact code as a comment's fenced block yields it (every line ends with `\n`).
const CODE: &str = "import json\nimport pandas as pd\ndf = pd.read_csv(\"/data/sales.csv\")\nprint(\"rows:\", len(df))\nprint(json.dumps({\"total\": int(df[\"amount\"].sum()), \"rows\": len(df)}))\n";

/// The secrets never reach comments, the summary or the outputs, and the
/// log shows them only in `::add-mask::` lines.
fn assert_no_leak(f: &ActionFixture, run: &Run, secret: &str) {
    for c in
        f.gh.comments(REPO, 7)
            .iter()
            .chain(f.gh.comments(REPO, 8).iter())
    {
        assert!(!c.body.contains(secret), "secret in comment {}", c.id);
    }
    assert!(!run.summary.contains(secret));
    assert!(!run.outputs.values().any(|v| v.contains(secret)));
    for line in run.stdout.lines().chain(run.stderr.lines()) {
        if line.contains(secret) {
            assert!(line.starts_with("::add-mask::"), "secret in log: {line}");
        }
    }
    assert!(
        run.stdout.contains(&format!("::add-mask::{secret}")),
        "the secret was not masked\n{}",
        run.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comment_on_an_issue_runs_the_fenced_code_and_posts_result_code_and_audit() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    let body = format!(
        "/compute inputs=data/sales.csv total amount\r\nSum the amount column.\r\n{}\r\n",
        fenced(CODE).replace('\n', "\r\n")
    );
    let cid = f.comment("alice", &body);
    let run = f.run(COMMENT, "9001").await;
    assert_eq!(run.code, 0, "{}", run.log());

    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1, "one tracking comment");
    let c = &bots[0];
    // The whole answer: the run's marker, the result table, the exact code
    // with its full hash, the audit with the input, the link to the run.
    snapshot_sandbox_comment("answer_fenced_code", &c.body);
    // Acknowledged, then edited in place (stages, result).
    assert!(c.edits >= 2, "edits: {}", c.edits);
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "rocket"]);

    assert_eq!(run.out("status"), "ok");
    let result: Value = serde_json::from_str(run.out("result")).unwrap();
    assert_eq!(result, json!({"total": 42, "rows": 2}));
    assert_eq!(run.out("comment_id"), c.id.to_string());
    assert_eq!(run.out("code_sha256"), sha256(CODE));
    let report = f.report(&run);
    assert_eq!(report["status"], "ok");
    assert_eq!(report["code"], CODE);
    assert_eq!(report["inputs"][0]["name"], "sales.csv");
    // Without files of its own, the run's notebook is kept in the run's
    // artifact only: no Files part, nothing committed.
    let nb = std::fs::read(f.ws().join("compute-bot-reports/runs/9001-1/answer.ipynb")).unwrap();
    let cell = &crate::support::notebook::read(&nb)["cells"][0];
    assert_eq!(crate::support::notebook::text(&cell["source"]), CODE);
    assert!(!c.body.contains("#### Files"), "{}", c.body);
    assert!(run.summary.contains("compute-bot: result") && run.summary.contains("42"));
    assert!(!run.summary.contains("<!-- compute-bot:run="));
    // The sandbox's stdout reaches the log only between stop-commands markers.
    let start = run.stdout.find("::stop-commands::").expect("stop-commands");
    let token = run.stdout[start + 17..start + 17 + 32].to_string();
    let end = run.stdout.find(&format!("::{token}::")).expect("resume");
    assert!(run.stdout[start..end].contains("rows: 2"));
    assert!(!run.stdout[..start].contains("rows: 2"));
    // Every call carried the token; no request failed.
    let reqs = f.gh.requests();
    assert!(reqs.iter().all(|r| r.status < 400), "{reqs:?}");
    assert_no_leak(&f, &run, TOKEN);

    // A re-run of the same workflow run edits its own comment.
    let again = f
        .run_env(f.env(COMMENT, "9001").with("GITHUB_RUN_ATTEMPT", "2"))
        .await;
    assert_eq!(again.code, 0, "{}", again.log());
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1, "a re-run adds no comment");
    assert!(bots[0].edits > c.edits);
    assert_eq!(again.out("comment_id"), c.id.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comment_on_a_pull_request_takes_inputs_mentioned_in_the_goal() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    let code = "import json\nimport pandas as pd\nprint(json.dumps({\"mean\": float(pd.read_csv(\"/data/sales.csv\")[\"amount\"].mean())}))\n";
    let cid = f.comment_on(
        8,
        "alice",
        &format!("/compute mean amount in data/sales.csv\n{}", fenced(code)),
        "created",
    );
    let run = f.run(COMMENT, "9002").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert!(f.bot_comments(7).is_empty());
    let bots = f.bot_comments(8);
    assert_eq!(bots.len(), 1);
    // The answer, with the mean (21) of the input its goal mentions.
    snapshot_sandbox_comment("answer_pull_request_mentioned_input", &bots[0].body);
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"mean": 21.0})
    );
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "rocket"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_is_answered_with_code_from_the_model() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    let llm = LlmStandin::openai().await;
    let code = "import json\nimport pandas as pd\ndf = pd.read_csv('/data/sales.csv')\nprint(json.dumps({'max_region': df.loc[df['amount'].idxmax(), 'region']}))";
    llm.push(Reply::code(
        "Read the CSV and take the row with the largest amount.",
        code,
    ));
    llm.push(Reply::text("South has the largest amount."));
    let cid = f.comment(
        "alice",
        "/compute inputs=data/sales.csv which region has the largest amount?",
    );
    let run = f
        .run_env(f.env(COMMENT, "9003").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"max_region": "south"})
    );
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2, "generate + explain");
    let (_, user) = &reqs[0].messages()[0];
    assert!(user.contains("which region has the largest amount"));
    assert!(user.contains("sales.csv"), "the prompt previews the input");
    for r in &reqs {
        assert!(!r.everything_but_auth().contains(CANARY_KEY));
    }
    let c = &f.bot_comments(7)[0];
    // The generated code (`idxmax`) is shown, with the model's explanation.
    snapshot_sandbox_comment("answer_model_code", &c.body);
    let report = f.report(&run);
    assert!(report["code"].as_str().unwrap().contains("idxmax"));
    assert_eq!(
        run.out("code_sha256"),
        sha256(report["code"].as_str().unwrap())
    );
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "rocket"]);
    assert_no_leak(&f, &run, CANARY_KEY);
    assert_no_leak(&f, &run, TOKEN);
}

/// Events the bot must not act on: nothing posted, no reaction, no API call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_comments_comments_without_the_command_and_bots_are_ignored() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    let cases = [
        (
            "alice",
            "/compute total\n```python\nprint('{}')\n```",
            "edited",
            "edited",
        ),
        (
            "alice",
            "Thanks, /compute looks great!",
            "created",
            "does not start",
        ),
        ("alice", "/computer total", "created", "does not start"),
        (
            "dependabot[bot]",
            "/compute total\n```python\nprint('{}')\n```",
            "created",
            "bots",
        ),
    ];
    for (author, body, action, why) in cases {
        let cid = f.comment_on(7, author, body, action);
        let run = f.run(COMMENT, "9004").await;
        assert_eq!(run.code, 0, "{body}: {}", run.log());
        assert_eq!(run.out("status"), "ignored");
        assert!(
            run.stdout
                .lines()
                .any(|l| l.starts_with("::notice::") && l.contains(why)),
            "{body}: {}",
            run.log()
        );
        assert!(f.gh.reactions(cid).is_empty());
    }
    assert!(f.bot_comments(7).is_empty());
    assert!(f.gh.requests().is_empty(), "{:?}", f.gh.requests());

    // Other events are ignored too.
    f.write_event(&json!({"ref": "refs/heads/main"}));
    let run = f.run("push", "9004").await;
    assert_eq!((run.code, run.out("status")), (0, "ignored"));
    assert!(run.stdout.contains("push"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_user_is_refused_and_nothing_runs() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    let cid = f.comment(
        "rita",
        &format!("/compute inputs=data/sales.csv total\n{}", fenced(CODE)),
    );
    let run = f.run(COMMENT, "9005").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "refused");
    assert_eq!(f.gh.reactions(cid), vec!["-1"]);
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1);
    // The whole reply (no tracking comment).
    snapshot_comment("refused_read_only", &bots[0].body);
    assert!(run.out("report_path").is_empty(), "nothing ran, no report");
    assert!(!run.stdout.contains("::stop-commands::"));
    assert_eq!(
        f.gh.count("GET", "/collaborators/rita/permission"),
        1,
        "the raw permission endpoint decides"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflow_dispatch_posts_to_the_issue_input() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    f.write_event(&json!({
        "inputs": {"goal": "total amount", "code": CODE, "inputs": "data/sales.csv", "issue": "7"},
        "ref": "refs/heads/main",
        "repository": {"full_name": REPO},
        "sender": f.gh.user_json("alice"),
        "workflow": ".github/workflows/compute-dispatch.yml"
    }));
    let run = f.run("workflow_dispatch", "9006").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1);
    // The dispatch's goal and the total (42).
    snapshot_sandbox_comment("answer_workflow_dispatch", &bots[0].body);
    assert_eq!(run.out("comment_id"), bots[0].id.to_string());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap()["total"],
        42
    );
    assert_eq!(
        f.gh.count("POST", "/reactions"),
        0,
        "no comment to react to"
    );
    assert_eq!(
        f.gh.count("GET", "/permission"),
        0,
        "starting the workflow is the authorization"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_without_an_issue_writes_the_summary_only() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    f.write_event(&json!({"schedule": "0 6 * * 1"}));
    let env = f
        .env("schedule", "9007")
        .with("INPUT_GOAL", "weekly total")
        .with("INPUT_CODE", CODE)
        .with("INPUT_INPUTS", "data/sales.csv");
    let run = f.run_env(env).await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok");
    assert_eq!(run.out("comment_id"), "");
    assert!(run.summary.contains("weekly total") && run.summary.contains("42"));
    assert!(f.gh.requests().is_empty(), "nothing to post");

    // With an issue configured, the result goes there too. This code also
    // looks for the token and the API key in its environment: they never enter the sandbox.
    let peek = "import json, os\nvals = ' '.join(os.environ.values())\nprint(json.dumps({'token': 'ghs_' in vals, 'key': 'sk-' in vals, 'n': len(os.environ)}))\n";
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text("No secret was visible."));
    // No `provider` input (the default); the key also in the provider's own variable.
    let env = f
        .env("schedule", "9008")
        .with("INPUT_GOAL", "weekly total")
        .with("INPUT_CODE", peek)
        .with("INPUT_MODEL", DEFAULT_MODEL)
        .with("INPUT_BASE_URL", llm.base_url())
        .with("INPUT_API_KEY", CANARY_KEY)
        .with("OPENAI_API_KEY", CANARY_KEY)
        .with("INPUT_INPUTS", "data/sales.csv")
        .with("INPUT_ISSUE", "#7");
    let run = f.run_env(env).await;
    assert_eq!(run.code, 0, "{}", run.log());
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1);
    let seen: Value = serde_json::from_str(run.out("result")).unwrap();
    assert_eq!(
        (&seen["token"], &seen["key"]),
        (&json!(false), &json!(false))
    );
    assert!(
        seen["n"].as_u64().unwrap() > 0,
        "the check saw an environment"
    );
    // The run's marker (9008), and the model explained.
    snapshot_sandbox_comment("answer_schedule_to_issue", &bots[0].body);
    assert_no_leak(&f, &run, CANARY_KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_5xx_is_retried() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    f.gh.fail_next(Some("POST"), "/issues/7/comments", 502, 1);
    f.gh.fail_next(Some("POST"), "/reactions", 503, 1);
    let cid = f.comment(
        "alice",
        &format!("/compute inputs=data/sales.csv total\n{}", fenced(CODE)),
    );
    let run = f.run(COMMENT, "9301").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(f.bot_comments(7).len(), 1);
    let posts: Vec<u16> =
        f.gh.requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/issues/7/comments"))
            .map(|r| r.status)
            .collect();
    assert_eq!(posts, vec![502, 201]);
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "rocket"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_commenting_fails_with_the_permission_to_add_and_keeps_the_result_in_the_summary()
{
    let f = ActionFixture::with_pull_request_and_bot().await;
    f.gh.fail_next(Some("POST"), "/issues/7/comments", 403, 10);
    let cid = f.comment(
        "alice",
        &format!("/compute inputs=data/sales.csv total\n{}", fenced(CODE)),
    );
    let run = f.run(COMMENT, "9401").await;
    assert_eq!(run.code, 1, "{}", run.log());
    assert!(f.bot_comments(7).is_empty());
    // Nothing was posted: no 🚀 (the thread shows that something went wrong).
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "confused"]);
    let err = run
        .stdout
        .lines()
        .find(|l| l.starts_with("::error::") && l.contains("403"))
        .unwrap_or_else(|| panic!("{}", run.log()));
    assert!(err.contains("permissions: issues: write"), "{err}");
    assert_eq!(run.out("status"), "ok");
    assert_eq!(run.out("comment_id"), "");
    assert!(run.summary.contains("could not post") && run.summary.contains("42"));
    assert!(run.summary.contains("issues: write"));
}

/// The first comment POST fails on every try (502 three times); a later
/// write creates the comment. The final state decides: the thread shows the
/// result, so the run succeeds and says nothing about a failed post.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_comment_post_that_fails_but_is_recovered_later_is_a_success() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    f.gh.fail_next(Some("POST"), "/issues/7/comments", 502, 3);
    let cid = f.comment(
        "alice",
        &format!("/compute inputs=data/sales.csv total\n{}", fenced(CODE)),
    );
    let run = f.run(COMMENT, "9411").await;
    let posts: Vec<u16> =
        f.gh.requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/issues/7/comments"))
            .map(|r| r.status)
            .collect();
    assert_eq!(posts, vec![502, 502, 502, 201], "{}", run.log());
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1);
    snapshot_sandbox_comment("answer_after_failed_posts", &bots[0].body);
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok");
    assert_eq!(run.out("comment_id"), bots[0].id.to_string());
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "rocket"]);
    assert!(!run.summary.contains("could not post"), "{}", run.summary);
}

/// Listing the comments (to find this run's tracking comment) fails every
/// time; creating one works, so the result still reaches the thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_result_is_posted_when_listing_comments_fails() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    f.gh.fail_next(Some("GET"), "/issues/7/comments", 500, 1000);
    let cid = f.comment(
        "alice",
        &format!("/compute inputs=data/sales.csv total\n{}", fenced(CODE)),
    );
    let run = f.run(COMMENT, "9421").await;
    let bots = f.bot_comments(7);
    assert_eq!(bots.len(), 1, "{}", run.log());
    snapshot_sandbox_comment("answer_listing_fails", &bots[0].body);
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok");
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "rocket"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_inputs_and_a_missing_model_are_explained_and_nothing_runs() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    std::fs::write(f.ws().join("secret.env"), "TOKEN=x\n").unwrap();
    let cid = f.comment(
        "alice",
        &format!(
            "/compute inputs=data/nope.csv,secret.env total\n{}",
            fenced(CODE)
        ),
    );
    let run = f.run(COMMENT, "9501").await;
    run.assert_ended(1, "failed");
    snapshot_comment("inputs_unusable", &f.bot_comments(7)[0].body);
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "confused"]);
    assert!(!run.stdout.contains("::stop-commands::"));

    let cid = f.comment("alice", "/compute inputs=data/sales.csv median amount");
    let run = f.run(COMMENT, "9502").await;
    run.assert_ended(1, "failed");
    snapshot_comment("no_model", &f.newest_bot_body(7));
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "confused"]);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("::error::") && l.contains("no model"))
    );

    // A half-configured model (a key but no model name) is a configuration error.
    let cid = f.comment("alice", "/compute inputs=data/sales.csv median amount");
    let run = f
        .run_env(f.env(COMMENT, "9503").with("INPUT_API_KEY", CANARY_KEY))
        .await;
    run.assert_ended(2, "error");
    snapshot_comment("model_half_configured", &f.newest_bot_body(7));
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "confused"]);
    assert_no_leak(&f, &run, CANARY_KEY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_errors_exit_2_and_name_the_culprit() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    // A malformed event file.
    std::fs::write(f.event_path(), "{\"action\": \"created\", \"comment\": ").unwrap();
    let run = f.run(COMMENT, "9601").await;
    assert_eq!(run.code, 2, "{}", run.log());
    let err = run
        .stdout
        .lines()
        .find(|l| l.starts_with("::error::"))
        .unwrap();
    assert!(
        err.contains("GITHUB_EVENT_PATH") && err.contains("not valid JSON"),
        "{err}"
    );
    assert_eq!(run.out("status"), "error");

    // A missing variable.
    f.comment("alice", "/compute total");
    let run = f
        .run_env(f.env(COMMENT, "9602").without("GITHUB_RUN_ID"))
        .await;
    assert_eq!(run.code, 2, "{}", run.log());
    assert!(run.stdout.contains("GITHUB_RUN_ID"), "{}", run.log());
    assert!(run.summary.contains("GITHUB_RUN_ID"));

    // A broken policy file: file:line:column, nothing posted.
    f.policy("version: 1\nwho:\n  min_permision: write\n");
    let run = f.run(COMMENT, "9603").await;
    assert_eq!(run.code, 2, "{}", run.log());
    let err = run
        .stdout
        .lines()
        .find(|l| l.starts_with("::error file=.github/compute-bot.yml,line=3"))
        .unwrap_or_else(|| panic!("{}", run.log()));
    assert!(err.contains("min_permision"), "{err}");
    assert!(run.summary.contains(".github/compute-bot.yml:3:"));
    assert!(f.gh.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workspace_policy_decides_who_and_whether_edits_count() {
    let f = ActionFixture::with_pull_request_and_bot().await;
    f.policy(
        "version: 1\nwho:\n  users: [alice, rita]\n  min_permission: write\n  allow_edited_comments: true\n",
    );
    // Listed but only read permission: refused, naming the permission.
    let cid = f.comment(
        "rita",
        &format!("/compute inputs=data/sales.csv total\n{}", fenced(CODE)),
    );
    let run = f.run(COMMENT, "9701").await;
    run.assert_ended(0, "refused");
    assert_eq!(f.gh.reactions(cid), vec!["-1"]);
    snapshot_comment("refused_listed_read_only", &f.bot_comments(7)[0].body);
    // Write permission but not listed: refused.
    f.gh.set_permission(REPO, "wendy", "write");
    let cid = f.comment(
        "wendy",
        &format!("/compute inputs=data/sales.csv total\n{}", fenced(CODE)),
    );
    let run = f.run(COMMENT, "9702").await;
    run.assert_ended(0, "refused");
    assert_eq!(f.gh.reactions(cid), vec!["-1"]);
    snapshot_comment("refused_not_listed", &f.newest_bot_body(7));
    // Listed with write, and this policy lets edited comments count.
    let cid = f.comment_on(
        7,
        "alice",
        &format!("/compute inputs=data/sales.csv total\n{}", fenced(CODE)),
        "edited",
    );
    let run = f.run(COMMENT, "9703").await;
    run.assert_ended(0, "ok");
    assert_eq!(f.gh.reactions(cid), vec!["eyes", "rocket"]);
    let report = f.report(&run);
    assert_eq!(report["policy"], ".github/compute-bot.yml");
}

/// The first model is rate limited with a long `Retry-After`: the fallback
/// (the `fallback_*` inputs) writes the code, the comment and the record
/// name it, each key goes only to its own host, and both keys are masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_model_hands_over_to_the_fallback_inputs() {
    const FALLBACK_KEY: &str = "sk-ant-fallback-input-canary-5e4d3c2b";
    let f = ActionFixture::new().await;
    let first = LlmStandin::openai().await;
    first.push(Reply::rate_limited(300));
    let fallback =
        LlmStandin::start(compute_bot::model::Provider::Anthropic, Some(FALLBACK_KEY)).await;
    fallback.push(Reply::code(
        "Sum the amounts.",
        "import json\nimport pandas as pd\ndf = pd.read_csv('/data/sales.csv')\nprint(json.dumps({'total': int(df['amount'].sum())}))",
    ));
    fallback.push(Reply::text("The amounts add up to 42."));
    f.comment("alice", "/compute inputs=data/sales.csv total amount");
    let env = f
        .env(COMMENT, "9301")
        .model(&first, CANARY_KEY)
        .with("INPUT_FALLBACK_PROVIDER", "anthropic")
        .with("INPUT_FALLBACK_MODEL", "claude-fallback-1")
        .with("INPUT_FALLBACK_BASE_URL", fallback.base_url())
        .with("INPUT_FALLBACK_API_KEY", FALLBACK_KEY);
    let run = f.run_env(env).await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"total": 42})
    );
    assert_eq!(first.requests().len(), 1, "no waiting on the first model");
    assert_eq!(fallback.requests().len(), 2, "generation and explanation");
    for r in first.requests() {
        assert!(!format!("{:?}{}", r.headers, r.body).contains(FALLBACK_KEY));
    }
    for r in fallback.requests() {
        assert_eq!(r.header("x-api-key"), Some(FALLBACK_KEY));
        assert!(!format!("{:?}{}", r.headers, r.body).contains(CANARY_KEY));
    }
    let c = &f.bot_comments(7)[0];
    // The answer names the fallback model that wrote the code.
    snapshot_sandbox_comment("answer_fallback_model", &c.body);
    let report = f.report(&run);
    assert_eq!(
        report["attempts"][0]["model"],
        json!({"provider": "anthropic", "model": "claude-fallback-1", "fallback": true})
    );
    assert_eq!(report["record"]["model"], report["attempts"][0]["model"]);
    assert_no_leak(&f, &run, CANARY_KEY);
    assert_no_leak(&f, &run, FALLBACK_KEY);
}
