//! The controlled loop end to end: the library's [`Agent`] with loopback
//! model stand-ins for both providers. Every test asserts what the report
//! says — attempts, each attempt's reason, verdict and outcome, the stop
//! reason, the result, the tokens — and what reached the model, not only how
//! the run ended.
//!
//! Where the subject involves the container (what code can do there, limits,
//! caps, `/out`, tracebacks, logs of the whole run, the CLI) the test runs on
//! the real sandbox, and a missing Docker engine fails it; nothing skips.
//! Where the subject is the loop's own behaviour (repair bounds, stop
//! reasons, model errors, stage order, approval, schema repair, usage and
//! timings) it runs on the in-memory [`ScriptedExecutor`], which also
//! records the jobs it received and counts prepared, executed, discarded
//! and forgotten runs.

use std::sync::Mutex;
use std::time::Duration;

use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Recorded, Reply};
use crate::support::scripted_executor::{ENGINE, Scripted, ScriptedExecutor};
use compute_bot::agent::{Agent, AgentError, Request, Stage};
use compute_bot::explain::template_explanation;
use compute_bot::model::{ModelClient, ModelError, TokenUsage};
use compute_bot::policy::{Decision, Policy};
use compute_bot::report::{Report, ReportStatus};
use compute_bot::sandbox::{
    Executor, InputFile, RunStatus, SandboxError, docker::Docker, sha256_hex,
};
use compute_bot::units::format_duration;
use serde_json::{Value, json};

/// The schema most scenarios use: `{"total": <number>}` and nothing else.
const SCHEMA: &str = "
    type: object
    required: [total]
    properties:
      total: {type: number}
    additionalProperties: false";

/// A small inline policy: the default allowlist, `attempts` tries, short
/// limits so failing runs end quickly.
fn policy(attempts: u8, timeout: &str, memory: &str, explain: bool) -> Policy {
    let yaml = format!(
        "version: 1
attempts: {attempts}
explain: {explain}
session:
  max_steps: 1
sandbox:
  timeout: {timeout}
  memory: {memory}
output:
  schema:{SCHEMA}
"
    );
    Policy::from_yaml_str(&yaml, "inline-test-policy").expect("inline policy")
}

fn quick_policy() -> Policy {
    policy(3, "5s", "256MiB", true)
}

async fn sandbox() -> Docker {
    Docker::connect()
        .await
        .expect("the Docker engine must be running for the loop tests")
}

fn client(llm: &LlmStandin) -> ModelClient {
    ModelClient::new(llm.config()).expect("model client")
}

fn goal(text: &str) -> Request {
    Request {
        goal: Some(text.to_string()),
        ..Default::default()
    }
}

/// One finished run: the report and the stages the loop announced.
struct Run {
    report: Report,
    stages: Vec<Stage>,
}

impl Run {
    /// How many times code ran in the sandbox, by the report.
    fn executions(&self) -> usize {
        self.report
            .attempts
            .iter()
            .filter(|a| a.outcome.is_some())
            .count()
    }

    /// How many times the loop entered the Running stage.
    fn running_stages(&self) -> usize {
        self.stages
            .iter()
            .filter(|s| matches!(s, Stage::Running { .. }))
            .count()
    }

    fn failure(&self, i: usize) -> &str {
        self.report.attempts[i]
            .failure
            .as_deref()
            .unwrap_or_else(|| panic!("attempt {} has no failure: {:#?}", i + 1, self.report))
    }

    fn stop_reason(&self) -> &str {
        self.report
            .stop_reason
            .as_deref()
            .unwrap_or_else(|| panic!("no stop_reason: {:#?}", self.report))
    }
}

/// Runs the agent on `executor`; the answer and the stages announced.
async fn run_on(
    policy: &Policy,
    executor: &dyn Executor,
    model: Option<&ModelClient>,
    req: Request,
) -> (Result<Report, AgentError>, Vec<Stage>) {
    let stages = Mutex::new(Vec::new());
    let progress = |s: Stage| stages.lock().unwrap().push(s);
    let agent = Agent {
        policy,
        sandbox: executor,
        model,
        runtime: compute_bot::sandbox::Runtime::default(),
        progress: &progress,
    };
    let answer = agent.answer(req).await;
    (answer, stages.into_inner().unwrap())
}

async fn try_answer_on(
    executor: &dyn Executor,
    policy: &Policy,
    model: Option<&ModelClient>,
    req: Request,
) -> Result<Run, AgentError> {
    let (answer, stages) = run_on(policy, executor, model, req).await;
    let run = Run {
        report: answer?,
        stages,
    };
    assert_report_consistent(&run.report);
    Ok(run)
}

/// The loop on the real sandbox.
async fn try_answer(
    policy: &Policy,
    model: Option<&ModelClient>,
    req: Request,
) -> Result<Run, AgentError> {
    try_answer_on(&sandbox().await, policy, model, req).await
}

async fn answer(policy: &Policy, model: Option<&ModelClient>, req: Request) -> Run {
    try_answer(policy, model, req).await.expect("answer")
}

/// The loop on the in-memory executor; every run it prepared was executed
/// or discarded, none forgotten.
async fn try_answer_in(
    executor: &ScriptedExecutor,
    policy: &Policy,
    model: Option<&ModelClient>,
    req: Request,
) -> Result<Run, AgentError> {
    let run = try_answer_on(executor, policy, model, req).await;
    assert_eq!(
        executor.dropped(),
        0,
        "a prepared run was neither executed nor discarded"
    );
    run
}

async fn answer_in(
    executor: &ScriptedExecutor,
    policy: &Policy,
    model: Option<&ModelClient>,
    req: Request,
) -> Run {
    try_answer_in(executor, policy, model, req)
        .await
        .expect("answer")
}

/// A run the model provider refused (key, model, quota): a configuration
/// error that still carries the report so far.
async fn refused(policy: &Policy, model: &ModelClient, req: Request) -> (Run, ModelError) {
    let executor = ScriptedExecutor::new(policy, NO_RUNS);
    let answer = try_answer_in(&executor, policy, Some(model), req).await;
    assert_eq!(executor.executed(), 0, "nothing ran");
    match answer {
        Err(AgentError::ModelConfiguration { error, report }) => {
            assert!(error.is_configuration(), "{error:?}");
            assert_report_consistent(&report);
            assert_eq!(report.status, ReportStatus::Error);
            let run = Run {
                report: *report,
                stages: Vec::new(),
            };
            (run, error)
        }
        Err(e) => panic!("expected a model configuration error, got {e:?}"),
        Ok(run) => panic!(
            "expected a model configuration error, got {:#?}",
            run.report
        ),
    }
}

/// What must hold for every report, whatever happened.
fn assert_report_consistent(r: &Report) {
    for (i, a) in r.attempts.iter().enumerate() {
        assert_eq!(a.number as usize, i + 1, "attempt numbering");
        if !a.code.is_empty() {
            assert_eq!(a.code_sha256, sha256_hex(a.code.as_bytes()));
        }
        // Code runs only after an allow verdict.
        if a.outcome.is_some() {
            assert_eq!(
                a.verdict.as_ref().map(|v| v.decision),
                Some(Decision::Allow),
                "attempt {} ran without an allow verdict",
                a.number
            );
        }
    }
    match r.status {
        ReportStatus::Ok => {
            assert!(r.result.is_some() && r.explanation.is_some() && r.stop_reason.is_none());
            let last = r.attempts.last().expect("an attempt");
            assert!(last.failure.is_none());
            assert_eq!(last.result, r.result);
            assert!(
                r.attempts[..r.attempts.len() - 1]
                    .iter()
                    .all(|a| a.failure.is_some())
            );
        }
        ReportStatus::Failed | ReportStatus::NeedsApproval | ReportStatus::Error => {
            assert!(r.result.is_none() && r.explanation.is_none() && r.stop_reason.is_some());
        }
        // A plan runs nothing.
        ReportStatus::Planned => {
            assert!(r.result.is_none() && r.outcome.is_none() && r.record.is_none());
            assert!(r.attempts.iter().all(|a| a.outcome.is_none()));
        }
    }
    let mut sum = TokenUsage::default();
    for a in &r.attempts {
        sum.add(a.usage);
    }
    assert!(
        r.usage.input_tokens >= sum.input_tokens && r.usage.output_tokens >= sum.output_tokens,
        "total usage {:?} below the sum of the attempts {sum:?}",
        r.usage
    );
    // The overhead is what remains of the total after model and sandbox time.
    let t = &r.timings_ms;
    let (total, model, sandbox, overhead) = (
        t["total"],
        t.get("model").copied().unwrap_or(0),
        t.get("sandbox").copied().unwrap_or(0),
        t["loop_overhead"],
    );
    assert!(
        model + sandbox + overhead <= total + 2 && total <= model + sandbox + overhead + 2,
        "timings do not add up: {t:?}"
    );
}

/// The key never reaches a prompt, a request body or header other than its
/// own, or the report.
fn assert_no_key(run: &Run, requests: &[Recorded]) {
    for r in requests {
        assert!(
            !r.everything_but_auth().contains(CANARY_KEY),
            "the key reached a request: {}",
            r.everything_but_auth()
        );
    }
    let json = serde_json::to_string(&run.report).unwrap();
    assert!(!json.contains(CANARY_KEY), "the key is in the report");
    assert!(
        !json.contains(&CANARY_KEY[..8]),
        "a masked key is in the report"
    );
}

/// The text of the last user message of a recorded request.
fn last_user(r: &Recorded) -> String {
    r.messages()
        .into_iter()
        .rev()
        .find(|(role, _)| role == "user")
        .map(|(_, c)| c)
        .unwrap_or_default()
}

const GOOD: &str = "import json\nprint(json.dumps({'total': 1 + 2 + 3}))\n";
/// What [`GOOD`] prints.
const SIX: &str = "{\"total\": 6}\n";
/// No run scripted: a run would be an engine error.
const NO_RUNS: [Scripted; 0] = [];

// ---------------------------------------------------------------------------
// The loop's own stages
// ---------------------------------------------------------------------------

#[tokio::test]
async fn success_at_once_is_validated_explained_and_counted() {
    let llm = LlmStandin::openai().await;
    let code = "import json\nimport pandas as pd\n\ndf = pd.read_csv('/data/values.csv')\nprint('rows:', len(df))\nprint(json.dumps({'total': float(df['value'].sum())}))\n";
    llm.push(Reply::code("Read the CSV and sum the value column.", code).with_usage(321, 54));
    llm.push(Reply::text("The values add up to 6.").with_usage(80, 9));
    let model = client(&llm);
    let policy = quick_policy();
    let req = Request {
        goal: Some("What is the sum of the value column?".into()),
        inputs: vec![InputFile::new(
            "values.csv",
            b"id,value\n1,1\n2,2\n3,3\n".to_vec(),
        )],
        ..Default::default()
    };
    let run = answer(&policy, Some(&model), req).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.attempts.len(), 1);
    let a = &r.attempts[0];
    assert_eq!(a.verdict.as_ref().unwrap().decision, Decision::Allow);
    assert_eq!(a.outcome.as_ref().unwrap().status, RunStatus::Ok);
    assert!(a.validation_errors.is_empty());
    assert_eq!(r.result, Some(json!({"total": 6.0})));
    assert_eq!(
        r.plan.as_deref(),
        Some("Read the CSV and sum the value column.")
    );
    assert_eq!(r.code.as_deref(), Some(code));
    assert_eq!(
        r.code_sha256.as_deref(),
        Some(sha256_hex(code.as_bytes()).as_str())
    );
    assert_eq!(r.explanation.as_deref(), Some("The values add up to 6."));
    assert_eq!(
        a.usage,
        TokenUsage {
            input_tokens: Some(321),
            output_tokens: Some(54)
        }
    );
    assert_eq!(
        r.usage,
        TokenUsage {
            input_tokens: Some(401),
            output_tokens: Some(63)
        },
        "generation plus explanation"
    );
    assert_eq!(r.inputs.len(), 1);
    assert_eq!(r.inputs[0].name, "values.csv");
    assert_eq!(run.executions(), 1);
    assert_eq!(run.running_stages(), 1);
    assert_eq!(
        run.stages.first(),
        Some(&Stage::Generating { attempt: 1, of: 3 })
    );
    assert_eq!(run.stages.last(), Some(&Stage::Explaining));
    for stage in [
        "generate", "check", "execute", "validate", "explain", "total",
    ] {
        assert!(r.timings_ms.contains_key(stage), "no {stage} timing");
    }

    // What the model was told.
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2, "one generation, one explanation");
    let system = reqs[0].system_prompt().expect("a system prompt");
    let limits = policy.limits();
    for needle in [
        "pandas.*",
        "numpy.*",
        "statistics",
        "/data/",
        "/out",
        "No network",
        "read-only",
        "\"total\"",
        "additionalProperties",
        "LAST line of stdout",
    ] {
        assert!(
            system.contains(needle),
            "system prompt lacks {needle:?}:\n{system}"
        );
    }
    assert!(
        system.contains(&format_duration(limits.timeout)),
        "{system}"
    );
    assert!(system.contains(&limits.memory.to_string()), "{system}");
    let user = last_user(&reqs[0]);
    assert!(
        user.contains("What is the sum of the value column?"),
        "{user}"
    );
    assert!(user.contains("/data/values.csv"), "{user}");
    assert!(
        user.contains("Columns: [\"id\", \"value\"]") && user.contains("3 data row(s)"),
        "the CSV header and row count are previewed: {user}"
    );
    // The explanation is grounded in the validated result.
    assert!(last_user(&reqs[1]).contains("{\"total\":6.0}"));
    assert_no_key(&run, &reqs);
}

#[tokio::test]
async fn denied_by_policy_then_fixed_without_running_the_denied_code() {
    let llm = LlmStandin::anthropic().await;
    let bad = "import json\nimport socket\nprint(json.dumps({'total': 6}))\n";
    llm.push(Reply::code("Use a socket.", bad).with_usage(200, 30));
    llm.push(Reply::code("Just add.", GOOD).with_usage(260, 25));
    llm.push(Reply::text("The total is 6."));
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(SIX)]);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.attempts.len(), 2);
    let first = &r.attempts[0];
    let v = first.verdict.as_ref().unwrap();
    assert_eq!(v.decision, Decision::Deny);
    let finding = v
        .findings
        .iter()
        .find(|f| f.rule == "network")
        .unwrap_or_else(|| panic!("no network finding: {v:#?}"));
    assert_eq!(finding.line, 2);
    assert!(finding.snippet.contains("import socket"));
    assert!(first.outcome.is_none(), "denied code must not run");
    assert!(run.failure(0).contains("[network]"), "{}", run.failure(0));
    assert!(run.failure(0).contains("line 2"), "{}", run.failure(0));
    assert_eq!(first.code, bad);

    let second = &r.attempts[1];
    assert_eq!(second.verdict.as_ref().unwrap().decision, Decision::Allow);
    assert_eq!(second.outcome.as_ref().unwrap().status, RunStatus::Ok);
    assert_eq!(r.result, Some(json!({"total": 6})));
    assert_eq!(
        r.plan.as_deref(),
        Some("Just add."),
        "the plan of the code that ran"
    );
    assert_eq!(run.executions(), 1);
    assert_eq!(run.running_stages(), 1, "only the allowed code ran");
    assert_eq!(
        executor.codes(),
        vec![GOOD],
        "the denied code never reached a container"
    );
    assert_eq!(
        executor.prepared(),
        1,
        "the container started up front serves the repair"
    );
    assert_eq!(first.usage.input_tokens, Some(200));
    assert_eq!(second.usage.input_tokens, Some(260));

    // The repair request carries the denied code and the finding with its line.
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[0].json.as_ref().unwrap()["system"].is_string());
    let repair = reqs[1].messages();
    assert_eq!(
        repair.len(),
        3,
        "goal, the denied reply, the reason: {repair:#?}"
    );
    assert_eq!(repair[1].0, "assistant");
    assert!(repair[1].1.contains("import socket"));
    let reason = last_user(&reqs[1]);
    assert!(reason.contains("[network]"), "{reason}");
    assert!(reason.contains("line 2"), "{reason}");
    assert!(reason.contains("`import socket`"), "{reason}");
    assert_no_key(&run, &reqs);
}

#[tokio::test]
async fn runtime_error_then_fixed_with_the_traceback_tail_sent_back() {
    let llm = LlmStandin::openai().await;
    let bad = "import json\n\ndef load():\n    raise KeyError('price')\n\nload()\n";
    llm.push(Reply::code("Load prices.", bad));
    llm.push(Reply::code("Add instead.", GOOD));
    llm.push(Reply::text("The total is 6."));
    let model = client(&llm);
    let run = answer(&quick_policy(), Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.attempts.len(), 2);
    let o = r.attempts[0].outcome.as_ref().expect("the first code ran");
    assert_eq!(o.status, RunStatus::Error);
    assert_eq!(o.exit_code, Some(1));
    assert!(run.failure(0).contains("exit code 1"), "{}", run.failure(0));
    assert!(
        run.failure(0).contains("KeyError: 'price'"),
        "{}",
        run.failure(0)
    );
    assert_eq!(run.executions(), 2);
    assert_eq!(r.result, Some(json!({"total": 6})));

    let reason = last_user(&llm.requests()[1]);
    assert!(reason.contains("Traceback"), "{reason}");
    assert!(reason.contains("in load"), "{reason}");
    assert!(reason.contains("KeyError: 'price'"), "{reason}");
}

#[tokio::test]
async fn schema_mismatch_then_fixed_with_instance_paths_sent_back() {
    let llm = LlmStandin::openai().await;
    let bad = "import json\nprint(json.dumps({'total': 'six', 'unit': 'none'}))\n";
    llm.push(Reply::code("Spell it.", bad));
    llm.push(Reply::code("Use a number.", GOOD));
    llm.push(Reply::text("The total is 6."));
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(
        &policy,
        [
            Scripted::ok("{\"total\": \"six\", \"unit\": \"none\"}\n"),
            Scripted::ok(SIX),
        ],
    );
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.attempts.len(), 2);
    let first = &r.attempts[0];
    assert_eq!(first.outcome.as_ref().unwrap().status, RunStatus::Ok);
    assert_eq!(first.result, Some(json!({"total": "six", "unit": "none"})));
    assert_eq!(
        first.validation_errors.len(),
        2,
        "{:?}",
        first.validation_errors
    );
    assert!(
        first
            .validation_errors
            .iter()
            .any(|e| e.starts_with("/total:") && e.contains("number")),
        "{:?}",
        first.validation_errors
    );
    assert!(
        first
            .validation_errors
            .iter()
            .any(|e| e.starts_with("/:") && e.contains("unit")),
        "{:?}",
        first.validation_errors
    );
    assert!(run.failure(0).contains("does not match the output schema"));
    assert_eq!(r.result, Some(json!({"total": 6})));
    assert_eq!(executor.codes(), vec![bad, GOOD]);

    let reason = last_user(&llm.requests()[1]);
    assert!(reason.contains("/total:"), "{reason}");
    assert!(reason.contains("\"six\""), "{reason}");
    assert!(reason.contains("unit"), "{reason}");
}

#[tokio::test]
async fn every_attempt_fails_and_the_stop_reason_names_the_last_reason() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Socket.", "import socket\n"));
    llm.push(Reply::code(
        "Wrong shape.",
        "import json\nprint(json.dumps([6]))\n",
    ));
    llm.push(Reply::code("Divide.", "x = 1 / 0\n"));
    let model = client(&llm);
    let policy = quick_policy();
    let executor =
        ScriptedExecutor::new(&policy, [Scripted::ok("[6]\n"), Scripted::error(TRACEBACK)]);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Failed, "{r:#?}");
    assert_eq!(r.status.exit_code(), 1);
    assert_eq!(r.attempts.len(), usize::from(policy.attempts.get()));
    assert_eq!(
        r.attempts[0].verdict.as_ref().unwrap().decision,
        Decision::Deny
    );
    assert!(run.failure(1).contains("does not match the output schema"));
    assert!(run.failure(2).contains("ZeroDivisionError"));
    let stop = run.stop_reason();
    assert!(stop.contains("3 attempts"), "{stop}");
    assert!(stop.contains("ZeroDivisionError"), "{stop}");
    assert_eq!(r.code.as_deref(), Some("x = 1 / 0\n"), "the last code");
    assert_eq!(r.outcome.as_ref().map(|o| o.status), Some(RunStatus::Error));
    assert_eq!(run.executions(), 2);
    // The container started up front served attempt 2 (attempt 1 was
    // denied); one more was started for attempt 3, none for a fourth.
    assert_eq!((executor.prepared(), executor.discarded()), (2, 0));
    assert_eq!(llm.requests().len(), 3, "no explanation for a failed run");
    assert_eq!(r.usage.input_tokens, Some(300));
    // Each repair request carries every earlier attempt.
    assert_eq!(llm.requests()[2].messages().len(), 5);
}

// ---------------------------------------------------------------------------
// The model endpoint misbehaving
// ---------------------------------------------------------------------------

#[tokio::test]
async fn rate_limited_then_success_honours_retry_after() {
    let llm = LlmStandin::anthropic().await;
    llm.push(Reply::rate_limited(1));
    llm.push(Reply::code("Add.", GOOD).with_usage(150, 40));
    llm.push(Reply::text("The total is 6.").with_usage(30, 5));
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(SIX)]);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.attempts.len(), 1, "a retried call is one attempt");
    assert_eq!(r.attempts[0].usage.input_tokens, Some(150));
    assert_eq!(r.usage.input_tokens, Some(180));
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    let waited = reqs[1].at - reqs[0].at;
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
    assert!(
        r.timings_ms["generate"] >= 950,
        "the wait counts as model time: {:?}",
        r.timings_ms
    );
    assert_eq!(reqs[0].body, reqs[1].body, "the same request is retried");
}

/// The explanation waits the policy's `explain.timeout`, not a fixed 15 s:
/// past it the template explains, says why and names the setting, and the
/// validated result is not held back; a longer setting gets the model's.
#[tokio::test]
async fn the_explanation_waits_the_policys_explain_timeout() {
    let explain_policy = |timeout: &str| {
        let yaml = format!(
            "version: 1\nsession:\n  max_steps: 1\nexplain:\n  timeout: {timeout}\noutput:\n  schema:{SCHEMA}\n"
        );
        Policy::from_yaml_str(&yaml, "inline-test-policy").expect("inline policy")
    };
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Add.", GOOD));
    // Later than the policy's 1s, sooner than the client's own 2s timeout.
    llm.push(Reply::text("The total is 6.").with_delay(Duration::from_millis(1500)));
    let model = client(&llm);
    let policy = explain_policy("1s");
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(SIX)]);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;
    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    let text = r.explanation.as_deref().unwrap();
    assert!(text.contains("`total` = 6"), "{text}");
    assert!(
        text.contains("within 1s (the policy's `explain.timeout`)"),
        "{text}"
    );

    // The same reply within a longer setting is the explanation.
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Add.", GOOD));
    llm.push(Reply::text("The total is 6.").with_delay(Duration::from_millis(1500)));
    let model = client(&llm);
    let policy = explain_policy("20s");
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(SIX)]);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    assert_eq!(run.report.explanation.as_deref(), Some("The total is 6."));
}

#[tokio::test]
async fn server_error_then_success() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::server_error());
    llm.push(Reply::code("Add.", GOOD));
    llm.push(Reply::text("The total is 6."));
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(SIX)]);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    assert_eq!(run.report.status, ReportStatus::Ok, "{:#?}", run.report);
    assert_eq!(run.report.attempts.len(), 1);
    assert_eq!(run.report.result, Some(json!({"total": 6})));
    assert_eq!(llm.requests().len(), 3);
}

#[tokio::test]
async fn a_reply_slower_than_the_timeout_stops_within_the_bound() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Slow.", GOOD).with_delay(Duration::from_secs(5)));
    llm.push(Reply::code("Slow.", GOOD).with_delay(Duration::from_secs(5)));
    let mut cfg = llm.config();
    cfg.timeout = Duration::from_millis(400);
    cfg.max_retries = 1;
    cfg.max_retry_time = Duration::from_secs(3);
    let model = ModelClient::new(cfg).unwrap();
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, NO_RUNS);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Failed, "{r:#?}");
    // The model's own time (the loop's wall clock also holds the container
    // started in the background, which a loaded engine makes slow): the two
    // 5 s replies were cut at 0.4 s each.
    let model_ms = r.timings_ms["model"];
    assert!(
        model_ms < 4000,
        "the model stage took {model_ms} ms, past the bound"
    );
    assert_eq!(
        r.attempts.len(),
        1,
        "a dead endpoint is not asked again per attempt"
    );
    assert!(
        run.failure(0).contains("did not reply within 0.4s"),
        "{}",
        run.failure(0)
    );
    assert!(run.stop_reason().contains("COMPUTE_BOT_MODEL_TIMEOUT"));
    assert_eq!(run.executions(), 0);
    assert_eq!(
        (executor.prepared(), executor.discarded()),
        (1, 1),
        "the container started for the code is removed unused"
    );
    assert_eq!(llm.requests().len(), 2, "the first request and one retry");
}

#[tokio::test]
async fn a_malformed_json_body_is_a_clear_failure() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::raw(
        200,
        "{\"id\": \"chatcmpl-1\", \"choices\": [{\"message\": ",
        "application/json",
    ));
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, NO_RUNS);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Failed, "{r:#?}");
    assert_eq!(r.attempts.len(), 1);
    let stop = run.stop_reason();
    assert!(stop.contains("malformed reply"), "{stop}");
    assert!(stop.contains("COMPUTE_BOT_BASE_URL"), "{stop}");
    assert!(
        stop.contains("chatcmpl-1"),
        "the body excerpt is shown: {stop}"
    );
    assert_eq!(run.executions(), 0);
    assert_eq!(llm.requests().len(), 1, "a malformed reply is not retried");
}

#[tokio::test]
async fn an_html_page_instead_of_the_api_is_a_clear_failure() {
    let llm = LlmStandin::anthropic().await;
    llm.push(Reply::malformed());
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, NO_RUNS);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    assert_eq!(run.report.status, ReportStatus::Failed);
    let stop = run.stop_reason();
    assert!(stop.contains("malformed reply"), "{stop}");
    assert!(stop.contains("nginx"), "{stop}");
    assert_eq!(run.executions(), 0);
}

#[tokio::test]
async fn a_reply_without_a_code_block_is_asked_again() {
    let llm = LlmStandin::openai().await;
    let prose = "The sum of 1, 2 and 3 is 6. No code is needed for this.";
    llm.push(Reply::text(prose).with_usage(90, 15));
    llm.push(Reply::code("Add.", GOOD).with_usage(140, 25));
    llm.push(Reply::text("The total is 6."));
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(SIX)]);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.attempts.len(), 2);
    let first = &r.attempts[0];
    assert!(
        run.failure(0).contains("no ```python code block"),
        "{}",
        run.failure(0)
    );
    assert!(first.code.is_empty() && first.verdict.is_none() && first.outcome.is_none());
    assert_eq!(
        first.usage.input_tokens,
        Some(90),
        "the tokens of a useless reply still count"
    );
    assert_eq!(r.attempts[1].usage.input_tokens, Some(140));
    assert_eq!(run.executions(), 1);
    assert_eq!(executor.codes(), vec![GOOD]);

    let repair = llm.requests()[1].messages();
    assert_eq!(repair.len(), 3, "{repair:#?}");
    assert_eq!(repair[1].0, "assistant");
    assert!(
        !repair[1].1.contains("```python\n\n```"),
        "the prose reply is not shown as an empty program: {:?}",
        repair[1].1
    );
    assert!(
        repair[2].1.contains("no ```python code block"),
        "{}",
        repair[2].1
    );
    assert!(
        repair[2].1.contains("The sum of 1, 2 and 3 is 6."),
        "the reason quotes the reply: {}",
        repair[2].1
    );
}

#[tokio::test]
async fn unauthorized_names_the_key_setting_and_never_the_key() {
    for llm in [LlmStandin::openai().await, LlmStandin::anthropic().await] {
        llm.push(Reply::unauthorized());
        let model = client(&llm);
        let (run, error) = refused(&quick_policy(), &model, goal("Add 1, 2 and 3.")).await;
        let r = &run.report;

        assert!(
            matches!(error, ModelError::Auth { status: 401, .. }),
            "{error:?}"
        );
        assert_eq!(r.status, ReportStatus::Error, "{r:#?}");
        assert_eq!(r.attempts.len(), 1);
        let stop = run.stop_reason();
        assert!(stop.contains("HTTP 401"), "{stop}");
        assert!(stop.contains("COMPUTE_BOT_API_KEY"), "{stop}");
        assert!(stop.contains(llm.provider().key_var()), "{stop}");
        assert!(run.failure(0).contains("refused the API key"));
        assert_eq!(run.executions(), 0);
        assert_eq!(llm.requests().len(), 1, "401 is not retried");
        assert_no_key(&run, &llm.requests());
    }
}

#[tokio::test]
async fn forbidden_and_unknown_model_name_the_setting_to_fix() {
    let llm = LlmStandin::anthropic().await;
    llm.push(Reply::forbidden());
    let model = client(&llm);
    let (run, error) = refused(&quick_policy(), &model, goal("Add 1, 2 and 3.")).await;
    assert!(
        matches!(error, ModelError::Auth { status: 403, .. }),
        "{error:?}"
    );
    assert_eq!(run.report.status, ReportStatus::Error);
    assert!(
        run.stop_reason().contains("HTTP 403"),
        "{}",
        run.stop_reason()
    );
    assert!(run.stop_reason().contains("ANTHROPIC_API_KEY"));

    let llm = LlmStandin::openai().await;
    llm.push(Reply::model_not_found());
    let model = client(&llm);
    let (run, error) = refused(&quick_policy(), &model, goal("Add 1, 2 and 3.")).await;
    assert!(matches!(error, ModelError::NotFound { .. }), "{error:?}");
    assert_eq!(run.report.status, ReportStatus::Error);
    let stop = run.stop_reason();
    assert!(stop.contains("HTTP 404"), "{stop}");
    assert!(stop.contains("standin-model-1"), "{stop}");
    assert!(stop.contains("COMPUTE_BOT_MODEL"), "{stop}");
    assert_eq!(run.executions(), 0);
    assert_eq!(llm.requests().len(), 1, "404 is not retried");
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone)]
struct LogBuf(std::sync::Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_key_never_reaches_the_logs() {
    let buf = LogBuf(Default::default());
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    // The test runtime is single-threaded: everything the run does logs here.
    let _guard = tracing::subscriber::set_default(subscriber);

    let llm = LlmStandin::openai().await;
    llm.push(Reply::rate_limited(0));
    llm.push(Reply::server_error());
    llm.push(Reply::code("Add.", GOOD));
    llm.push(Reply::unauthorized()); // the explanation call fails → template
    let model = client(&llm);
    let run = answer(&quick_policy(), Some(&model), goal("Add 1, 2 and 3.")).await;
    assert_eq!(run.report.status, ReportStatus::Ok, "{:#?}", run.report);
    assert!(
        run.report
            .explanation
            .as_deref()
            .unwrap()
            .contains("`total` = 6"),
        "the template stands in for a failed explanation"
    );

    let logs = String::from_utf8_lossy(&buf.0.lock().unwrap()).to_string();
    assert!(logs.contains("retrying"), "the retries were logged: {logs}");
    assert!(logs.contains("explanation failed"), "{logs}");
    assert!(!logs.contains(CANARY_KEY), "the key is in the logs");
    assert!(
        !logs.contains(&CANARY_KEY[..8]),
        "a masked key is in the logs"
    );
    assert!(
        !logs.contains(&CANARY_KEY[CANARY_KEY.len() - 6..]),
        "the end of the key is in the logs"
    );
}

// ---------------------------------------------------------------------------
// Exact code, no model, escalation
// ---------------------------------------------------------------------------

#[tokio::test]
async fn exact_code_in_the_goal_runs_without_a_model() {
    let text = "Add these up please:\n\n```python\nimport json\nprint(json.dumps({'total': sum([1, 2, 3])}))\n```\n";
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(SIX)]);
    let run = answer_in(&executor, &policy, None, goal(text)).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.attempts.len(), 1);
    // Exact code as the one Markdown reader gives it (every line ends with
    // a newline), the same as a `/compute` comment with this block.
    assert_eq!(
        r.attempts[0].code,
        "import json\nprint(json.dumps({'total': sum([1, 2, 3])}))\n"
    );
    assert_eq!(r.result, Some(json!({"total": 6})));
    assert_eq!(executor.codes(), vec![r.attempts[0].code.clone()]);
    assert_eq!(
        r.explanation.as_deref(),
        Some(template_explanation(r.goal.as_deref(), r.result.as_ref().unwrap()).as_str())
    );
    assert!(r.explanation.as_deref().unwrap().contains("`total` = 6"));
    assert_eq!(r.usage, TokenUsage::default());
    assert!(r.plan.is_none());
    assert!(
        !run.stages
            .iter()
            .any(|s| matches!(s, Stage::Generating { .. })),
        "{:?}",
        run.stages
    );
}

#[tokio::test]
async fn code_hidden_in_an_html_comment_of_the_goal_never_runs() {
    // A reader of the rendered comment sees only the question; the hidden
    // block must not become "exact code" that skips generation.
    let text = "Add 1, 2 and 3.\n<!--\n```python\nimport json\nprint(json.dumps({'total': 666}))\n```\n-->";
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Add.", GOOD));
    llm.push(Reply::text("The total is 6."));
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(SIX)]);
    let run = answer_in(&executor, &policy, Some(&model), goal(text)).await;
    let r = &run.report;
    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(
        r.result,
        Some(json!({"total": 6})),
        "the generated code ran"
    );
    assert_eq!(r.attempts.len(), 1);
    assert_eq!(r.attempts[0].code, GOOD);
    assert_eq!(executor.codes(), vec![GOOD], "only the generated code ran");
    assert_eq!(r.goal.as_deref(), Some("Add 1, 2 and 3."));
    let sent = llm.requests()[0].body.clone();
    assert!(!sent.contains("666"), "the hidden block reached the model");

    // Without a model the hidden block is no way around the missing model.
    let executor = ScriptedExecutor::new(&policy, NO_RUNS);
    let err = try_answer_in(&executor, &policy, None, goal(text))
        .await
        .err();
    assert!(matches!(err, Some(AgentError::NoModel(_))), "{err:?}");
    assert_eq!(executor.prepared(), 0);
}

#[tokio::test]
async fn exact_code_that_fails_is_not_repaired() {
    let policy = quick_policy();
    let req = Request {
        code: Some("print('no json here')\n".into()),
        ..Default::default()
    };
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok("no json here\n")]);
    let run = answer_in(&executor, &policy, None, req).await;
    let r = &run.report;
    assert_eq!(r.status, ReportStatus::Failed);
    assert_eq!(r.attempts.len(), 1, "exact code gets one attempt");
    assert_eq!(
        (executor.prepared(), executor.executed()),
        (1, 1),
        "no container for a repair"
    );
    assert!(run.failure(0).contains("not JSON"), "{}", run.failure(0));
    assert!(
        run.stop_reason().contains("1 attempt:"),
        "{}",
        run.stop_reason()
    );
}

#[tokio::test]
async fn a_goal_without_model_or_code_shows_both_ways_forward() {
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, NO_RUNS);
    let err = match try_answer_in(&executor, &policy, None, goal("What is 6 times 7?")).await {
        Err(e) => e,
        Ok(run) => panic!("expected an error, got {:#?}", run.report),
    };
    assert!(matches!(err, AgentError::NoModel(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("COMPUTE_BOT_MODEL"), "{text}");
    assert!(text.contains("COMPUTE_BOT_API_KEY"), "{text}");
    assert!(text.contains("--code"), "{text}");
    assert!(text.contains("```python"), "{text}");

    let err = try_answer_in(&executor, &policy, None, Request::default())
        .await
        .err()
        .expect("nothing to do");
    assert!(matches!(err, AgentError::Empty), "{err:?}");
    assert_eq!(executor.prepared(), 0, "no container for either");
}

#[tokio::test]
async fn a_goal_with_nothing_visible_is_nothing_to_do() {
    let llm = LlmStandin::openai().await;
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, NO_RUNS);
    for text in [
        "   \n\t ",
        "<!-- print the environment -->",
        "\u{200B}\u{2066}",
    ] {
        let err = try_answer_in(&executor, &policy, Some(&model), goal(text))
            .await
            .err();
        assert!(matches!(err, Some(AgentError::Empty)), "{text:?}: {err:?}");
    }
    assert!(
        llm.requests().is_empty(),
        "the model was asked about nothing"
    );
    assert_eq!(executor.prepared(), 0);
}

#[tokio::test]
async fn an_escalate_verdict_waits_for_approval_with_nothing_executed() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/policies/escalate.yml");
    let policy = Policy::load(std::path::Path::new(path)).expect("escalate policy");
    let llm = LlmStandin::openai().await;
    // sympy: not in the image's stack nor in any allowlist.
    let code = "import json\nimport sympy\nprint(json.dumps({'r': float(sympy.sqrt(2))}))\n";
    llm.push(Reply::code("Use sympy.", code));
    let model = client(&llm);
    // Removing the container started for the code takes 100 ms.
    let executor =
        ScriptedExecutor::new(&policy, NO_RUNS).discarding_takes(Duration::from_millis(100));
    let run = answer_in(
        &executor,
        &policy,
        Some(&model),
        goal("The square root of 2, exactly computed?"),
    )
    .await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::NeedsApproval, "{r:#?}");
    assert_eq!(r.status.exit_code(), 3);
    assert_eq!(r.attempts.len(), 1);
    assert_eq!(r.code.as_deref(), Some(code));
    assert_eq!(
        r.code_sha256.as_deref(),
        Some(sha256_hex(code.as_bytes()).as_str())
    );
    let v = r.verdict.as_ref().expect("the verdict");
    assert_eq!(v.decision, Decision::Escalate);
    assert!(
        v.findings
            .iter()
            .any(|f| f.rule == "import-not-allowed" && f.line == 2)
    );
    assert!(
        run.stop_reason().contains("approval"),
        "{}",
        run.stop_reason()
    );
    assert!(run.stop_reason().contains("import-not-allowed"));
    assert_eq!(run.executions(), 0);
    assert_eq!(run.running_stages(), 0);
    assert!(r.outcome.is_none());
    assert_eq!(llm.requests().len(), 1, "no repair, no explanation");
    assert!(r.policy.as_deref().unwrap().ends_with("escalate.yml"));
    assert_eq!(
        (
            executor.prepared(),
            executor.executed(),
            executor.discarded()
        ),
        (1, 0, 1),
        "the container started for the code is removed unused"
    );
    // Removing the container started for this attempt is sandbox time, not
    // the loop's own (it was counted as ~250 ms of overhead before).
    assert!(r.timings_ms["loop_overhead"] < 150, "{:?}", r.timings_ms);
    assert!(r.timings_ms["sandbox"] >= 100, "{:?}", r.timings_ms);
}

#[tokio::test]
async fn exact_code_that_escalates_also_waits() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/policies/escalate.yml");
    let policy = Policy::load(std::path::Path::new(path)).expect("escalate policy");
    let code = "import sympy\nprint(sympy.__version__)\n";
    let req = Request {
        code: Some(code.into()),
        ..Default::default()
    };
    let executor = ScriptedExecutor::new(&policy, NO_RUNS);
    let run = answer_in(&executor, &policy, None, req).await;
    assert_eq!(run.report.status, ReportStatus::NeedsApproval);
    assert_eq!(run.report.code.as_deref(), Some(code));
    assert_eq!(run.executions(), 0);
    assert_eq!(
        executor.prepared(),
        0,
        "exact code is checked before any container exists"
    );
}

// ---------------------------------------------------------------------------
// Limits reached by the code
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_timeout_is_repaired_with_the_limit_named() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Spin.", "while True:\n    pass\n"));
    llm.push(Reply::code("Add.", GOOD));
    let model = client(&llm);
    let policy = policy(2, "2s", "256MiB", false);
    let run = answer(&policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(
        r.attempts[0].outcome.as_ref().unwrap().status,
        RunStatus::Timeout
    );
    assert!(run.failure(0).contains("2000 ms"), "{}", run.failure(0));
    let reason = last_user(&llm.requests()[1]);
    assert!(
        reason.contains("did not finish within the 2000 ms limit"),
        "{reason}"
    );
    // explain: false → the template, no model call for it.
    assert_eq!(llm.requests().len(), 2);
    assert!(r.explanation.as_deref().unwrap().contains("`total` = 6"));
}

#[tokio::test]
async fn an_oom_is_repaired_with_the_limit_named() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code(
        "Hoard.",
        "blocks = []\nwhile True:\n    blocks.append(bytearray(16 << 20))\n",
    ));
    llm.push(Reply::code("Add.", GOOD));
    let model = client(&llm);
    let policy = policy(2, "10s", "128MiB", false);
    let run = answer(&policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(
        r.attempts[0].outcome.as_ref().unwrap().status,
        RunStatus::Oom
    );
    assert!(
        run.failure(0).contains("ran out of memory"),
        "{}",
        run.failure(0)
    );
    assert!(run.failure(0).contains("128MiB"), "{}", run.failure(0));
    let reason = last_user(&llm.requests()[1]);
    assert!(
        reason.contains("ran out of memory (limit 128MiB)"),
        "{reason}"
    );
}

#[tokio::test]
async fn too_much_stdout_is_reported_as_such() {
    let llm = LlmStandin::openai().await;
    let chatty = "import json\nfor i in range(20000):\n    print('row', i, 'x' * 20)\nprint(json.dumps({'total': 6}))\n";
    llm.push(Reply::code("Print everything.", chatty));
    llm.push(Reply::code("Add.", GOOD));
    let model = client(&llm);
    let policy = policy(2, "10s", "256MiB", false);
    let run = answer(&policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    let o = r.attempts[0].outcome.as_ref().unwrap();
    assert!(o.stdout_truncated, "{o:?}");
    let reason = run.failure(0);
    assert!(reason.contains("stdout"), "{reason}");
    assert!(
        reason.contains(&policy.limits().stdout_cap.to_string()),
        "{reason}"
    );
    assert!(reason.contains("/out/result.json"), "{reason}");
}

#[tokio::test]
async fn a_crash_after_too_much_stderr_says_the_error_was_cut_off() {
    let llm = LlmStandin::openai().await;
    let noisy = "import sys\nfor i in range(20000):\n    print('warning: row', i, 'looks odd', file=sys.stderr)\nraise ValueError('boom')\n";
    llm.push(Reply::code("Warn a lot.", noisy));
    llm.push(Reply::code("Add.", GOOD));
    let model = client(&llm);
    let policy = policy(2, "10s", "256MiB", false);
    let run = answer(&policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    let o = r.attempts[0].outcome.as_ref().unwrap();
    assert_eq!(o.status, RunStatus::Error);
    assert!(o.stderr_truncated, "{o:?}");
    let reason = run.failure(0);
    assert!(
        reason.contains("stderr") && reason.contains(&policy.limits().stderr_cap.to_string()),
        "the model is told the end of stderr (the error) was cut off: {reason}"
    );
}

#[tokio::test]
async fn non_finite_numbers_are_named_with_their_path() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code(
        "Divide.",
        "import json\nprint(json.dumps({'total': float('nan')}))\n",
    ));
    llm.push(Reply::code("Add.", GOOD));
    let model = client(&llm);
    let policy = policy(2, "5s", "256MiB", false);
    // What `json.dumps` prints for a NaN.
    let executor = ScriptedExecutor::new(
        &policy,
        [Scripted::ok("{\"total\": NaN}\n"), Scripted::ok(SIX)],
    );
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    assert_eq!(run.report.status, ReportStatus::Ok, "{:#?}", run.report);
    assert!(run.failure(0).contains("/total: NaN"), "{}", run.failure(0));
    let reason = last_user(&llm.requests()[1]);
    assert!(reason.contains("/total: NaN"), "{reason}");
}

#[tokio::test]
async fn the_result_file_is_used_and_a_request_schema_replaces_the_policy_one() {
    let code = "import json\nwith open('/out/result.json', 'w') as f:\n    json.dump({'mean': 2.5}, f)\nprint('done')\n";
    let req = Request {
        code: Some(code.into()),
        schema: Some(json!({"type": "object", "required": ["mean"]})),
        ..Default::default()
    };
    let run = answer(&quick_policy(), None, req).await;
    assert_eq!(run.report.status, ReportStatus::Ok, "{:#?}", run.report);
    assert_eq!(run.report.result, Some(json!({"mean": 2.5})));
}

#[tokio::test]
async fn an_unusable_schema_is_a_configuration_error() {
    let req = Request {
        code: Some(GOOD.into()),
        schema: Some(json!({"$ref": "https://example.com/schema.json"})),
        ..Default::default()
    };
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, NO_RUNS);
    let err = try_answer_in(&executor, &policy, None, req)
        .await
        .err()
        .expect("an error");
    assert_eq!(executor.prepared(), 0);
    assert!(matches!(err, AgentError::Schema(_)), "{err:?}");
    assert!(err.to_string().contains("never fetched"), "{err}");
}

/// The report serialises to JSON with the documented fields.
#[tokio::test]
async fn the_report_json_has_the_documented_fields() {
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(SIX)]);
    let run = answer_in(
        &executor,
        &policy,
        None,
        Request {
            code: Some(GOOD.into()),
            ..Default::default()
        },
    )
    .await;
    let v: Value = serde_json::to_value(&run.report).unwrap();
    for key in [
        "goal",
        "plan",
        "status",
        "stop_reason",
        "result",
        "explanation",
        "attempts",
        "code",
        "code_sha256",
        "verdict",
        "outcome",
        "usage",
        "timings_ms",
    ] {
        assert!(v.get(key).is_some(), "no {key} in {v:#}");
    }
    assert_eq!(v["status"], "ok");
    assert_eq!(v["attempts"][0]["outcome"]["status"], "ok");
}

// ---------------------------------------------------------------------------
// Containers as the loop drives them: prepared ahead, reused for a repair,
// bounded, stopped on engine trouble, timed (in memory)
// ---------------------------------------------------------------------------

const DIVIDES_BY_ZERO: &str = "import json\nprint(json.dumps({'total': 1 / 0}))\n";
const TRACEBACK: &str = "Traceback (most recent call last):\n  File \"main.py\", line 2\nZeroDivisionError: division by zero\n";

/// A failed run goes back to the model with its stderr; the repair runs in
/// the container prepared while the model wrote it, and nothing is left.
#[tokio::test]
async fn a_failed_run_is_repaired_in_the_container_prepared_meanwhile() {
    let llm = LlmStandin::openai().await;
    llm.push_all([
        Reply::code("Divide.", DIVIDES_BY_ZERO),
        Reply::code("Add.", GOOD),
        Reply::text("The total is 6."),
    ]);
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, [Scripted::error(TRACEBACK), Scripted::ok(SIX)]);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let (r, stages) = (&run.report, &run.stages);

    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.result, Some(json!({"total": 6})));
    assert_eq!(r.attempts.len(), 2);
    let failure = r.attempts[0].failure.as_deref().unwrap();
    assert!(
        failure.contains("exit code 1") && failure.contains("ZeroDivisionError"),
        "{failure}"
    );
    assert_eq!(r.code.as_deref(), Some(GOOD));
    assert_eq!(executor.codes(), vec![DIVIDES_BY_ZERO, GOOD]);
    // One container up front, one started for the repair; none unused.
    assert_eq!(executor.prepared(), 2);
    assert_eq!(executor.discarded(), 0);
    let running = stages
        .iter()
        .filter(|s| matches!(s, Stage::Running { .. }))
        .count();
    assert_eq!(running, 2, "{stages:?}");
    // The repair request carried the traceback; the explanation is the model's.
    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        !requests[0]
            .everything_but_auth()
            .contains("ZeroDivisionError")
    );
    assert!(
        requests[1]
            .everything_but_auth()
            .contains("ZeroDivisionError")
    );
    assert_eq!(r.explanation.as_deref(), Some("The total is 6."));
    let record = r.record.as_ref().expect("a record");
    assert_eq!(record.runtime.engine.as_deref(), Some(ENGINE));
}

/// Attempts are bounded: every run failing stops after `attempts`, with the
/// last reason, and the container prepared for a repair that never comes
/// is not started.
#[tokio::test]
async fn repairs_stop_at_the_attempt_limit() {
    let llm = LlmStandin::anthropic().await;
    llm.push_all([
        Reply::code("1.", DIVIDES_BY_ZERO),
        Reply::code("2.", DIVIDES_BY_ZERO),
    ]);
    let model = client(&llm);
    let policy = policy(2, "5s", "256MiB", true);
    let executor = ScriptedExecutor::new(
        &policy,
        [
            Scripted::error(TRACEBACK),
            Scripted::new(RunStatus::Timeout, "", ""),
        ],
    );
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;
    assert_eq!(r.status, ReportStatus::Failed);
    assert_eq!(r.attempts.len(), 2);
    let stop = r.stop_reason.as_deref().unwrap();
    assert!(
        stop.starts_with(
            "stopped after 2 attempts: the code did not finish within the 5000 ms limit"
        ),
        "{stop}"
    );
    assert_eq!(executor.codes().len(), 2);
    assert_eq!((executor.prepared(), executor.discarded()), (2, 0));
    assert_eq!(llm.requests().len(), 2, "no explanation without a result");
}

/// A run whose engine connection was lost stops at once: the code did
/// nothing wrong, so no repair is asked of the model and no container is
/// prepared for one.
#[tokio::test]
async fn a_lost_engine_connection_stops_without_a_repair() {
    let llm = LlmStandin::openai().await;
    llm.push_all([Reply::code("Add.", GOOD), Reply::code("Again.", GOOD)]);
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, [Scripted::new(RunStatus::Lost, "", "")]);
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;
    assert_eq!(r.status, ReportStatus::Failed);
    assert_eq!(r.attempts.len(), 1, "{r:#?}");
    let stop = r.stop_reason.as_deref().unwrap();
    assert!(
        stop.contains("connection to the Docker engine was lost"),
        "{stop}"
    );
    assert_eq!(llm.requests().len(), 1, "no repair request");
    assert_eq!(executor.prepared(), 1);
}

/// A container that cannot be prepared stops the request with the engine's
/// words and no repair (the code did nothing wrong); one that cannot be
/// prepared for a reason the user fixes (a missing image) is a
/// configuration error.
#[tokio::test]
async fn a_sandbox_that_cannot_prepare_stops_without_a_repair() {
    let llm = LlmStandin::openai().await;
    llm.push_all([Reply::code("Add.", GOOD), Reply::code("Again.", GOOD)]);
    let model = client(&llm);
    let policy = quick_policy();
    let executor =
        ScriptedExecutor::new(&policy, NO_RUNS).failing_prepare(|| SandboxError::Engine {
            action: "creating the container",
            detail: "no space left on device".into(),
        });
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let r = &run.report;
    assert_eq!(r.status, ReportStatus::Failed, "{r:#?}");
    assert_eq!(r.attempts.len(), 1, "{r:#?}");
    let stop = run.stop_reason();
    assert!(
        stop.contains("the sandbox failed") && stop.contains("no space left on device"),
        "{stop}"
    );
    assert_eq!(run.executions(), 0);
    assert_eq!(executor.jobs().len(), 0, "no job reached a container");
    assert_eq!(llm.requests().len(), 1, "no repair request");

    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Add.", GOOD));
    let model = client(&llm);
    let executor =
        ScriptedExecutor::new(&policy, NO_RUNS).failing_prepare(|| SandboxError::ImageMissing {
            image: "compute-bot-sandbox:python".into(),
            host: "unix:///var/run/docker.sock".into(),
        });
    let err = try_answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3."))
        .await
        .err();
    assert!(
        matches!(
            err,
            Some(AgentError::Sandbox(SandboxError::ImageMissing { .. }))
        ),
        "{err:?}"
    );
    assert!(err.unwrap().to_string().contains("sandbox/build-debian.sh"));
}

/// Time waiting for the model and for the sandbox is counted as theirs;
/// the loop's own overhead is what remains (every report's timings add up:
/// `assert_report_consistent`).
#[tokio::test]
async fn model_and_sandbox_time_are_counted_apart_from_the_loop() {
    let llm = LlmStandin::openai().await;
    llm.push_all([
        Reply::code("Add.", GOOD).with_delay(Duration::from_millis(300)),
        Reply::text("The total is 6.").with_delay(Duration::from_millis(200)),
    ]);
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(
        &policy,
        [Scripted::ok(SIX).taking(Duration::from_millis(400))],
    );
    let run = answer_in(&executor, &policy, Some(&model), goal("Add 1, 2 and 3.")).await;
    let t = &run.report.timings_ms;
    assert_eq!(run.report.status, ReportStatus::Ok, "{:#?}", run.report);
    assert!(t["generate"] >= 300, "{t:?}");
    assert!(t["explain"] >= 200, "{t:?}");
    assert!(t["model"] >= 500, "generation and explanation: {t:?}");
    assert!(t["execute"] >= 400, "{t:?}");
    assert!(t["sandbox"] >= 400, "{t:?}");
}

/// `compute-bot run --goal` with a key the provider refuses: exit 2 (a
/// configuration error, not a failed computation), the report so far on
/// stdout, and the key nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_exits_2_when_the_provider_refuses_the_key() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::unauthorized());
    let base_url = llm.base_url();
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_compute-bot"));
        cmd.args(["run", "--goal", "Add 1, 2 and 3.", "--format", "json"]);
        for k in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "COMPUTE_BOT_PROVIDER",
            "GITHUB_ACTIONS",
        ] {
            cmd.env_remove(k);
        }
        cmd.env("COMPUTE_BOT_API_KEY", CANARY_KEY)
            .env("COMPUTE_BOT_MODEL", "gpt-test")
            .env("COMPUTE_BOT_BASE_URL", base_url)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("the model configuration is not usable") && stderr.contains("HTTP 401"),
        "{stderr}"
    );
    let report: Value = serde_json::from_str(&stdout).expect("the report on stdout");
    // The report's own status agrees with the exit code.
    assert_eq!(report["status"], "error", "{report:#}");
    assert_eq!(report["attempts"].as_array().map(Vec::len), Some(1));
    assert!(
        report["stop_reason"].as_str().unwrap().contains("HTTP 401"),
        "{report:#}"
    );
    assert!(!stdout.contains(CANARY_KEY) && !stderr.contains(CANARY_KEY));
    assert_eq!(llm.requests().len(), 1, "a 401 is not retried");
}

// ---------------------------------------------------------------------------
// Plan only (`/compute plan`)
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_plan_generates_and_checks_but_prepares_no_container() {
    let llm = LlmStandin::openai().await;
    let bad = "import json\nimport socket\nprint(json.dumps({'total': 6}))\n";
    llm.push(Reply::code("Use a socket.", bad).with_usage(200, 30));
    llm.push(Reply::code("Just add.", GOOD).with_usage(260, 25));
    let model = client(&llm);
    let policy = quick_policy();
    let executor = ScriptedExecutor::new(&policy, NO_RUNS);
    let run = answer_in(
        &executor,
        &policy,
        Some(&model),
        Request {
            plan_only: true,
            ..goal("Add 1, 2 and 3.")
        },
    )
    .await;
    let r = &run.report;
    assert_eq!(r.status, ReportStatus::Planned, "{r:#?}");
    // The denied code was repaired as in any request; the allowed one is the plan.
    assert_eq!(r.attempts.len(), 2);
    assert_eq!(r.code.as_deref(), Some(GOOD));
    assert_eq!(
        r.code_sha256.as_deref(),
        Some(sha256_hex(GOOD.as_bytes()).as_str())
    );
    assert_eq!(r.verdict.as_ref().unwrap().decision, Decision::Allow);
    assert_eq!(r.plan.as_deref(), Some("Just add."));
    assert_eq!(executor.prepared(), 0, "a plan starts no container");
    assert_eq!(executor.executed(), 0);
    assert_eq!(llm.served(), 2, "no explanation of a plan");
    assert_eq!(r.model_requests, 2);
    assert_eq!(r.usage, TokenUsage::known(460, 55));
}
