//! Usage and cost of an answer (issue 19): the comment footer, the job
//! summary, the `usage` output and the report, against the GitHub and model
//! stand-ins and the real sandbox.

use crate::support::action_fixture::{ActionFixture, COMMENT, snapshot_sandbox_comment};
use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Reply};
use serde_json::{Value, json};

const CODE: &str = "import json\nimport pandas as pd\ndf = pd.read_csv('/data/sales.csv')\nprint(json.dumps({'rows': len(df)}))";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_shows_its_model_requests_tokens_and_cost_everywhere() {
    let f = ActionFixture::builder()
        .policy(
            "version: 1\nmodel:\n  prices: {input_per_million: 1.0, output_per_million: 10.0}\n",
        )
        .start()
        .await;
    let llm = LlmStandin::openai().await;
    // A 500 first: the retry is a model request too (its reply has no tokens).
    llm.push(Reply::server_error());
    llm.push(Reply::code("Count the rows.", CODE).with_usage(1500, 300));
    llm.push(Reply::text("There are rows.").with_usage(500, 100));
    f.comment("alice", "/compute inputs=data/sales.csv how many rows?");
    let run = f
        .run_env(f.env(COMMENT, "9101").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(llm.served(), 3);
    let usage: Value = serde_json::from_str(run.out("usage")).unwrap();
    assert_eq!(
        usage,
        json!({"model_requests": 3, "input_tokens": 2000, "output_tokens": 400, "cost_usd": 0.006})
    );
    let line = "3 model requests · tokens: 2,000 in, 400 out · cost $0.0060";
    // The footer counts the requests, the tokens and the cost.
    snapshot_sandbox_comment("usage_counted", &f.bot_comments(7)[0].body);
    assert!(run.summary.contains(line), "{}", run.summary);
    let report = f.report(&run);
    assert_eq!(report["model_requests"], 3);
    assert_eq!(
        report["usage"],
        json!({"input_tokens": 2000, "output_tokens": 400})
    );
    assert_eq!(report["cost_usd"], json!(0.006));
    assert_eq!(
        report["prices"],
        json!({"input_per_million": 1.0, "output_per_million": 10.0})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_omits_usage_is_shown_as_unknown_not_zero() {
    let f = ActionFixture::builder()
        .policy(
            "version: 1\nmodel:\n  prices: {input_per_million: 1.0, output_per_million: 10.0}\n",
        )
        .start()
        .await;
    let llm = LlmStandin::openai().await;
    // The code's reply has no usage; the explanation's has: the sum is unknown.
    llm.push(Reply::code("Count the rows.", CODE).without_usage());
    llm.push(Reply::text("There are rows.").with_usage(500, 100));
    f.comment("alice", "/compute inputs=data/sales.csv how many rows?");
    let run = f
        .run_env(f.env(COMMENT, "9102").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    let usage: Value = serde_json::from_str(run.out("usage")).unwrap();
    assert_eq!(
        usage,
        json!({"model_requests": 2, "input_tokens": null, "output_tokens": null, "cost_usd": null})
    );
    let line = "2 model requests · tokens: unknown in, unknown out · cost unknown";
    snapshot_sandbox_comment("usage_unknown", &f.bot_comments(7)[0].body);
    assert!(run.summary.contains(line));
    let report = f.report(&run);
    assert_eq!(
        report["usage"],
        json!({"input_tokens": null, "output_tokens": null})
    );
    assert!(report.get("cost_usd").is_none(), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_code_without_a_model_takes_no_model_requests() {
    let f = ActionFixture::new().await;
    f.comment(
        "alice",
        &format!(
            "/compute inputs=data/sales.csv count\n{}",
            crate::support::action_fixture::fenced(&format!("{CODE}\n"))
        ),
    );
    let run = f.run(COMMENT, "9103").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(
        run.out("usage"),
        r#"{"model_requests":0,"input_tokens":0,"output_tokens":0}"#
    );
    snapshot_sandbox_comment("usage_none", &f.bot_comments(7)[0].body);
}
