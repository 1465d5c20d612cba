//! Checking answers beyond the schema, through the whole loop with the
//! model stand-in: `output.repeat` flags a result that changes between runs
//! in fresh containers, and `output.checks` (Python assertions run in the
//! sandbox) stop or escalate with the failed assertion — both on the real
//! sandbox; `output.verify: independent` compares a second program written
//! without seeing the first — what the programs print is the in-memory
//! executor's, since the comparison is the subject.

use crate::support::llm_standin::{LlmStandin, Reply};
use crate::support::scripted_executor::{Scripted, ScriptedExecutor};
use compute_bot::agent::{Agent, Request};
use compute_bot::model::ModelClient;
use compute_bot::policy::Policy;
use compute_bot::report::{Report, ReportStatus};
use compute_bot::sandbox::{Executor, InputFile, docker::Docker, sha256_hex};
use serde_json::json;

/// A policy with `output_extra` under `output`. The code here imports
/// nothing of the data stack, so nothing is preloaded: a preload slowed down
/// by a loaded engine does not eat into the 5 s (the preload has its own
/// tests in the sandbox crate).
fn policy(output_extra: &str) -> Policy {
    let yaml = format!(
        "version: 1
attempts: 2
explain: false
sandbox:
  timeout: 5s
  preload: []
output:
  schema:
    type: object
    required: [total]
    properties:
      total: {{type: number}}
{output_extra}"
    );
    Policy::from_yaml_str(&yaml, "inline-test-policy").expect("inline policy")
}

/// The loop on the real sandbox.
async fn answer(policy: &Policy, model: Option<&ModelClient>, req: Request) -> Report {
    let sandbox = Docker::connect()
        .await
        .expect("the Docker engine must be running");
    answer_on(&sandbox, policy, model, req).await
}

async fn answer_on(
    executor: &dyn Executor,
    policy: &Policy,
    model: Option<&ModelClient>,
    req: Request,
) -> Report {
    Agent {
        policy,
        sandbox: executor,
        model,
        runtime: compute_bot::sandbox::Runtime::default(),
        progress: &|_| {},
    }
    .answer(req)
    .await
    .expect("the loop runs")
}

fn code(c: &str) -> Request {
    Request {
        code: Some(c.to_string()),
        inputs: vec![InputFile::new(
            "values.csv",
            b"id,value\n1,1\n2,2\n3,3.5\n".to_vec(),
        )],
        ..Default::default()
    }
}

#[tokio::test]
async fn random_without_a_seed_is_flagged_by_repeat_and_a_seed_passes() {
    let p = policy("  repeat: 2");
    let r = answer(
        &p,
        None,
        code("import json, random\nprint(json.dumps({'total': random.random()}))\n"),
    )
    .await;
    assert_eq!(r.status, ReportStatus::Failed, "{r:#?}");
    assert!(
        r.result.is_none(),
        "an unstable result is not posted as fact"
    );
    let reason = r.stop_reason.as_deref().unwrap();
    assert!(reason.contains("changed between runs"), "{reason}");
    assert!(reason.contains("/total: "), "{reason}");
    let rec = r.record.as_ref().unwrap();
    assert_eq!(rec.repeats.len(), 1);
    assert_eq!(rec.repeats[0].run, 2);
    assert_ne!(rec.repeats[0].result_sha256, rec.result_sha256);
    // Nothing lost: the first run's result and outcome are in the report.
    assert!(r.attempts[0].result.is_some());
    assert!(r.outcome.is_some());

    let r = answer(
        &p,
        None,
        code(
            "import json, random\nrandom.seed(7)\nprint(json.dumps({'total': random.random()}))\n",
        ),
    )
    .await;
    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    let rec = r.record.as_ref().unwrap();
    assert_eq!(rec.repeats.len(), 1);
    assert!(rec.repeats[0].differences.is_empty());
    assert_eq!(rec.repeats[0].result_sha256, rec.result_sha256);
}

const SUM: &str = "import json, csv\nrows = list(csv.DictReader(open('/data/values.csv')))\nprint(json.dumps({'total': sum(float(r['value']) for r in rows)}))\n";

#[tokio::test]
async fn a_failed_check_stops_with_its_assertion_and_passing_checks_are_recorded() {
    let failing = policy(
        r#"  checks:
    - 0 <= result["total"] <= 1
    - 'assert result["total"] < 100, "total is implausible"'
    - result["missing"] > 0"#,
    );
    let r = answer(&failing, None, code(SUM)).await;
    assert_eq!(r.status, ReportStatus::Failed, "{r:#?}");
    assert!(r.result.is_none());
    let reason = r.stop_reason.as_deref().unwrap();
    assert!(
        reason.contains("failed 2 of the policy's output checks"),
        "{reason}"
    );
    assert!(
        reason.contains(r#"`0 <= result["total"] <= 1` — the expression is false"#),
        "{reason}"
    );
    assert!(reason.contains("KeyError: 'missing'"), "{reason}");
    assert!(reason.contains(r#"{"total":6.5}"#), "{reason}");
    let checks = &r.record.as_ref().unwrap().checks;
    assert_eq!(
        checks.iter().map(|c| c.passed).collect::<Vec<_>>(),
        vec![false, true, false]
    );

    let failing_assert = policy(
        r#"  checks:
    - 'assert result["total"] < 5, "total is implausible"'"#,
    );
    let r = answer(&failing_assert, None, code(SUM)).await;
    assert!(
        r.stop_reason
            .as_deref()
            .unwrap()
            .contains("AssertionError: total is implausible"),
        "{r:#?}"
    );

    let passing = policy(
        r#"  checks:
    - 0 < result["total"] < 10
    - math.isfinite(result["total"])"#,
    );
    let r = answer(&passing, None, code(SUM)).await;
    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.result, Some(json!({"total": 6.5})));
    let checks = &r.record.as_ref().unwrap().checks;
    assert_eq!(checks.len(), 2);
    assert!(checks.iter().all(|c| c.passed && c.error.is_none()));
}

#[tokio::test]
async fn a_failed_check_escalates_when_the_policy_says_so_and_approval_accepts_it() {
    let p = policy(
        r#"  checks:
    - result["total"] <= 1
  on_check_failure: escalate"#,
    );
    let r = answer(&p, None, code(SUM)).await;
    assert_eq!(r.status, ReportStatus::NeedsApproval, "{r:#?}");
    assert!(
        r.stop_reason
            .as_deref()
            .unwrap()
            .contains(r#"result["total"] <= 1"#)
    );
    assert_eq!(
        r.code_sha256.as_deref(),
        Some(sha256_hex(SUM.as_bytes()).as_str())
    );
    let approved = Request {
        approved_sha256: Some(sha256_hex(SUM.as_bytes())),
        ..code(SUM)
    };
    let r = answer(&p, None, approved).await;
    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert!(!r.record.as_ref().unwrap().checks[0].passed);
}

fn client(llm: &LlmStandin) -> ModelClient {
    ModelClient::new(llm.config()).expect("model client")
}

#[tokio::test]
async fn independent_verification_agrees_within_the_tolerance() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Sum the value column.", SUM));
    // A different method with a float rounding difference far below the tolerance.
    let second = "import json\nlines = open('/data/values.csv').read().split()[1:]\nprint(json.dumps({'total': sum(float(l.split(',')[1]) for l in lines) + 1e-12}))\n";
    llm.push(Reply::code("Split the lines by hand.", second));
    let model = client(&llm);
    let p = policy("  verify: independent\n  tolerance: 1e-6");
    let req = Request {
        goal: Some("What is the sum of the value column?".into()),
        ..code(SUM)
    };
    let req = Request { code: None, ..req };
    // What the two programs print on values.csv.
    let executor = ScriptedExecutor::new(
        &p,
        [
            Scripted::ok("{\"total\": 6.5}\n"),
            Scripted::ok("{\"total\": 6.500000000001}\n"),
        ],
    );
    let r = answer_on(&executor, &p, Some(&model), req).await;
    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.result, Some(json!({"total": 6.5})), "the first program's");
    // The second program ran once, in a fresh container, on the same input.
    let jobs = executor.jobs();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert_eq!((jobs[0].code.as_str(), jobs[0].one_off), (SUM, false));
    assert_eq!((jobs[1].code.as_str(), jobs[1].one_off), (second, true));
    assert_eq!(jobs[1].inputs, vec!["values.csv"]);
    let v = r.record.as_ref().unwrap().verification.as_ref().unwrap();
    assert!(v.agreed);
    assert_eq!(v.code.as_deref(), Some(second));
    assert_eq!(v.tolerance, 1e-6);
    // The second request never saw the first program.
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    let asked = requests[1].body.clone();
    assert!(!asked.contains("csv.DictReader"), "{asked}");
    assert!(asked.contains("independent check"), "{asked}");
}

#[tokio::test]
async fn independent_verification_disagreement_stops_with_both_results() {
    let llm = LlmStandin::anthropic().await;
    llm.push(Reply::code("Sum the value column.", SUM));
    let second = "import json\nprint(json.dumps({'total': 3.0}))\n";
    llm.push(Reply::code("Count the rows.", second));
    let model = client(&llm);
    let p = policy("  verify: independent");
    let req = Request {
        goal: Some("What is the sum of the value column?".into()),
        code: None,
        ..code(SUM)
    };
    let executor = ScriptedExecutor::new(
        &p,
        [
            Scripted::ok("{\"total\": 6.5}\n"),
            Scripted::ok("{\"total\": 3.0}\n"),
        ],
    );
    let r = answer_on(&executor, &p, Some(&model), req).await;
    assert_eq!(executor.one_off_runs(), 1);
    assert_eq!(r.status, ReportStatus::Failed, "{r:#?}");
    assert!(r.result.is_none());
    let reason = r.stop_reason.as_deref().unwrap();
    assert!(reason.contains("disagrees"), "{reason}");
    assert!(
        reason.contains(r#"First program: {"total":6.5}"#),
        "{reason}"
    );
    assert!(
        reason.contains(r#"Second program: {"total":3.0}"#),
        "{reason}"
    );
    assert!(reason.contains("/total: 6.5 ≠ 3.0"), "{reason}");
    let v = r.record.as_ref().unwrap().verification.as_ref().unwrap();
    assert!(!v.agreed);
    assert_eq!(v.code.as_deref(), Some(second));
    assert_eq!(v.result, Some(json!({"total": 3.0})));
}

#[test]
fn bad_output_settings_are_clear_errors() {
    let e = Policy::from_yaml_str("version: 1\noutput:\n  repeat: 0\n", "p.yml").unwrap_err();
    assert!(e.to_string().contains("repeat `0` is out of range"), "{e}");
    let e = Policy::from_yaml_str("version: 1\noutput:\n  tolerance: -1\n", "p.yml").unwrap_err();
    assert!(e.to_string().contains("p.yml:3:"), "{e}");
    assert!(e.to_string().contains("must be a number ≥ 0"), "{e}");
    let e = Policy::from_yaml_str("version: 1\noutput:\n  verify: twice\n", "p.yml").unwrap_err();
    assert!(e.to_string().contains("p.yml:3"), "{e}");
}
