//! A goal that asks for a chart gets one: the prompt says where to save it,
//! and a valid answer without an image gets one repair asking for it — one,
//! not more (after it the answer stands without a picture). Real Docker:
//! matplotlib draws in the sandbox.

use crate::support::llm_standin::{LlmStandin, Reply};
use compute_bot::agent::{Agent, Request};
use compute_bot::model::ModelClient;
use compute_bot::policy::Policy;
use compute_bot::report::{Report, ReportStatus};
use compute_bot::sandbox::{Runtime, docker::Docker};

const NUMBERS: &str = "import json\nprint(json.dumps({'by_day': [{'day': '2024-03-01', 'rate': 0.1}, {'day': '2024-03-02', 'rate': 0.2}]}))\n";
const CHART: &str = "import json\nimport matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot(['2024-03-01', '2024-03-02'], [0.1, 0.2])\nfig.savefig('/out/rate.png')\nprint(json.dumps({'by_day': [{'day': '2024-03-01', 'rate': 0.1}, {'day': '2024-03-02', 'rate': 0.2}]}))\n";

fn policy() -> Policy {
    Policy::from_yaml_str(
        "version: 1\nattempts: 3\nexplain: false\nsession: {max_steps: 1}\n",
        "inline",
    )
    .unwrap()
}

async fn answer(llm: &LlmStandin, goal: &str) -> Report {
    let sandbox = Docker::connect().await.expect("Docker");
    let model = ModelClient::new(llm.config()).unwrap();
    let policy = policy();
    let agent = Agent {
        policy: &policy,
        sandbox: &sandbox,
        model: Some(&model),
        runtime: Runtime::Runc,
        progress: &|_| {},
    };
    let report = agent
        .answer(Request {
            goal: Some(goal.to_string()),
            ..Default::default()
        })
        .await
        .expect("answer");
    sandbox.close().await;
    report
}

/// The text of the last request's messages.
fn last_prompt(llm: &LlmStandin) -> String {
    llm.requests().last().unwrap().body.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_goal_answered_without_an_image_gets_one_repair_asking_for_it() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Compute the rate by day.", NUMBERS));
    llm.push(Reply::code("Plot it too.", CHART));
    let report = answer(&llm, "Plot the conversion rate by day").await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:#?}");
    assert_eq!(report.attempts.len(), 2, "{report:#?}");
    let why = report.attempts[0].failure.as_deref().unwrap();
    assert!(why.contains("asks for a chart"), "{why}");
    // The repair request carries the reason to the model.
    assert!(last_prompt(&llm).contains("the program saved no image"));
    let o = report.outcome.as_ref().unwrap();
    assert_eq!(o.artifacts.len(), 1);
    assert!(o.artifacts[0].bytes.starts_with(b"\x89PNG"));
    // The generation prompt says where charts go.
    let first = &llm.requests()[0].body;
    assert!(first.contains("/out/<short_name>.png"), "{first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_is_asked_for_once_and_the_numbers_stand_without_it() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Compute the rate by day.", NUMBERS));
    llm.push(Reply::code("Still only numbers.", NUMBERS));
    let report = answer(&llm, "graph the conversion rate by day").await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:#?}");
    assert_eq!(report.attempts.len(), 2, "one repair, not two: {report:#?}");
    assert!(report.attempts[1].failure.is_none());
    assert_eq!(llm.remaining(), 0);

    // A goal that asks for no chart is answered at once.
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Compute the rate by day.", NUMBERS));
    let report = answer(&llm, "the conversion rate by day").await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:#?}");
    assert_eq!(report.attempts.len(), 1);
}
