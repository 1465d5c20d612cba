//! A follow-up on a session answer continues from the earlier state (issue
//! 40, item 6): the earlier answer's steps that ran without an error are
//! replayed (exact code, checked) in the new session's interpreter before
//! the model's first new step, the model's first request shows them with
//! their outputs, and where that cannot be done the answer says why in one
//! line and the session starts fresh.

use crate::support::llm_standin::{LlmStandin, Recorded, Reply};
use crate::support::scripted_executor::{Scripted, ScriptedExecutor};
use compute_bot::agent::{Agent, Request};
use compute_bot::model::ModelClient;
use compute_bot::policy::Policy;
use compute_bot::prompt::{Earlier, EarlierStep};
use compute_bot::report::{Report, ReportStatus, StepKind};
use compute_bot::sandbox::{InputFile, sha256_hex};
use serde_json::json;

fn policy() -> Policy {
    Policy::from_yaml_str(
        "version: 1
explain: false
session:
  max_steps: 4
output:
  schema:
    type: object
    required: [paid_total]
    properties:
      paid_total: {type: number}
",
        "followup-session-policy",
    )
    .expect("policy")
}

const ORDERS: &[u8] = b"id,status,amount,quarter\n1,paid,10,Q2\n2,Paid,5,Q3\n3,payed,7,Q3\n";

fn orders() -> InputFile {
    InputFile::new("orders.csv", ORDERS.to_vec())
}

/// The earlier answer's look: it defines `df` and `paid`.
const EARLIER_LOOK: &str = "import pandas as pd\ndf = pd.read_csv('/data/orders.csv')\n\
paid = df[df['status'].str.lower().isin(['paid', 'payed'])]\nprint(paid.groupby('quarter')['amount'].sum().to_string())\n";
/// What it printed then (and prints again on the same data).
const EARLIER_OUT: &str = "quarter\nQ2    10\nQ3    12\n";
/// The earlier answer's step that raised: not replayed.
const EARLIER_BROKEN: &str = "print(df['amout'].sum())\n";
/// The earlier answer's final step.
const EARLIER_FINAL: &str =
    "import json\nprint(json.dumps({'paid_total': float(paid['amount'].sum())}))\n";

/// The follow-up's one step uses `paid`, defined in the earlier answer's step 1.
const ONLY_Q3: &str = "`paid` is still defined from the earlier answer's step 1.

Step: final
Plan: sum the paid amounts of Q3 only

```python
import json
print(json.dumps({'paid_total': float(paid[paid['quarter'] == 'Q3']['amount'].sum())}))
```
";

fn step(code: Option<&str>, recorded: &str, stdout: &str, error: bool) -> EarlierStep {
    EarlierStep {
        code: code.map(str::to_string),
        code_sha256: sha256_hex(recorded.as_bytes()),
        stdout_sha256: sha256_hex(stdout.as_bytes()),
        error,
    }
}

/// The earlier session answer: a look, a step that raised, the final step.
fn earlier(look_code_found: bool) -> Earlier {
    Earlier {
        goal: Some("What is the total paid amount in orders.csv?".into()),
        code: Some(EARLIER_FINAL.into()),
        result: Some(json!({"paid_total": 22.0})),
        status: "ok".into(),
        steps: vec![
            step(
                look_code_found.then_some(EARLIER_LOOK),
                EARLIER_LOOK,
                EARLIER_OUT,
                false,
            ),
            step(Some(EARLIER_BROKEN), EARLIER_BROKEN, "", true),
            step(
                Some(EARLIER_FINAL),
                EARLIER_FINAL,
                "{\"paid_total\": 22.0}\n",
                false,
            ),
        ],
        inputs: vec![("orders.csv".into(), sha256_hex(ORDERS))],
    }
}

async fn answer(executor: &ScriptedExecutor, llm: &LlmStandin, earlier: Earlier) -> Report {
    let policy = policy();
    let model = ModelClient::new(llm.config()).expect("model client");
    let agent = Agent {
        policy: &policy,
        sandbox: executor,
        model: Some(&model),
        runtime: compute_bot::sandbox::Runtime::default(),
        progress: &|_| {},
    };
    let request = Request {
        goal: Some("same, but only Q3".into()),
        inputs: vec![orders()],
        earlier: Some(earlier),
        ..Request::default()
    };
    let report = agent.answer(request).await.expect("a report");
    assert_eq!(executor.sessions_dropped(), 0, "a session was not ended");
    assert_eq!(executor.sessions_ended(), executor.sessions());
    report
}

fn all_text(r: &Recorded) -> String {
    r.messages()
        .into_iter()
        .map(|(role, c)| format!("[{role}] {c}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_follow_up_continues_from_the_earlier_steps_state() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(ONLY_Q3));
    let policy = policy();
    let executor = ScriptedExecutor::new(
        &policy,
        [
            Scripted::ok(EARLIER_OUT),
            Scripted::ok("{\"paid_total\": 22.0}\n"),
            Scripted::ok("{\"paid_total\": 12.0}\n"),
        ],
    );
    let report = answer(&executor, &llm, earlier(true)).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:#?}");
    assert_eq!(report.result, Some(json!({"paid_total": 12.0})));
    let line = report.continued.as_deref().unwrap();
    assert!(
        line.starts_with("Continued from the earlier answer's state"),
        "{line}"
    );
    assert!(line.contains("steps 1, 3 replayed"), "{line}");
    // The clean earlier steps ran first, in the same container and session
    // as the new step, which uses `paid` from the earlier step 1; the step
    // that raised was not replayed.
    let jobs = executor.jobs();
    assert_eq!(jobs.len(), 3, "{jobs:?}");
    assert_eq!(executor.sessions(), 1);
    assert!(jobs.iter().all(|j| j.container == Some(1)), "{jobs:?}");
    assert_eq!(jobs[0].code, EARLIER_LOOK);
    assert_eq!(jobs[1].code, EARLIER_FINAL);
    assert!(jobs.iter().all(|j| j.code != EARLIER_BROKEN));
    assert!(jobs[2].code.contains("paid[paid['quarter'] == 'Q3']"));
    assert!(!jobs[2].code.contains("read_csv"));
    assert_eq!(
        jobs.iter().map(|j| j.step).collect::<Vec<_>>(),
        [Some(1), Some(2), Some(3)]
    );
    // The model's first request shows the replayed steps and their outputs.
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 1);
    let seen = all_text(&reqs[0]);
    assert!(
        seen.contains("the earlier answer's step 1, replayed"),
        "{seen}"
    );
    assert!(
        seen.contains("Step 1 (look) ran") && seen.contains("Q3    12"),
        "{seen}"
    );
    assert!(seen.contains("paid = df[df['status']"), "{seen}");
    // The report keeps the replayed steps (attempt 0) before the new one, so
    // the answer's record replays the whole state.
    let kinds: Vec<_> = report
        .steps
        .iter()
        .map(|s| (s.attempt, s.kind, s.result))
        .collect();
    assert_eq!(
        kinds,
        [
            (0, StepKind::Look, false),
            (0, StepKind::Look, false),
            (1, StepKind::Final, true)
        ]
    );
    let record = report.record.as_ref().unwrap();
    assert_eq!(record.steps.len(), 3);
    assert_eq!(
        record.steps[0].code_sha256,
        sha256_hex(EARLIER_LOOK.as_bytes())
    );
}

#[tokio::test]
async fn without_the_earlier_code_the_follow_up_starts_fresh_and_says_why() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(
        "Step: final\nPlan: sum Q3\n```python\nimport json, pandas as pd\n\
df = pd.read_csv('/data/orders.csv')\nprint(json.dumps({'paid_total': 12.0}))\n```",
    ));
    let policy = policy();
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok("{\"paid_total\": 12.0}\n")]);
    let report = answer(&executor, &llm, earlier(false)).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:#?}");
    let line = report.continued.as_deref().unwrap();
    assert_eq!(
        line,
        "Started a fresh session, not from the earlier answer's state: the code of its step 1 is \
not in its comment (no block hashes to the recorded sha256); the earlier answer is context only."
    );
    let jobs = executor.jobs();
    assert_eq!(jobs.len(), 1);
    assert!(jobs[0].code.contains("read_csv"));
    assert_eq!(report.steps.len(), 1);
    // The earlier answer is still context.
    let seen = all_text(&llm.requests()[0]);
    assert!(seen.contains("follows up an earlier answer"), "{seen}");
}

#[tokio::test]
async fn other_output_or_other_inputs_start_a_fresh_session() {
    // The replayed step prints something else now: the session it began is
    // ended and the model's step runs in a new one.
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(ONLY_Q3.replace(
        "import json\n",
        "import json, pandas as pd\npaid = pd.read_csv('/data/orders.csv')\n",
    )));
    let policy = policy();
    let executor = ScriptedExecutor::new(
        &policy,
        [
            Scripted::ok("quarter\nQ2    10\nQ3    99\n"),
            Scripted::ok("{\"paid_total\": 12.0}\n"),
        ],
    );
    let report = answer(&executor, &llm, earlier(true)).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:#?}");
    let line = report.continued.as_deref().unwrap();
    assert!(
        line.starts_with("Started a fresh session")
            && line.contains("its step 1 printed other output when replayed"),
        "{line}"
    );
    assert_eq!(executor.sessions(), 2);
    assert_eq!(report.steps.len(), 1, "{:?}", report.steps);
    let seen = all_text(&llm.requests()[0]);
    assert!(!seen.contains("replayed with its exact code"), "{seen}");

    // An input that changed: nothing is replayed.
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(ONLY_Q3));
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok("{\"paid_total\": 12.0}\n")]);
    let mut changed = earlier(true);
    changed.inputs[0].1 = "00".repeat(32);
    let report = answer(&executor, &llm, changed).await;
    let line = report.continued.as_deref().unwrap();
    assert!(
        line.contains("its input `orders.csv` changed since"),
        "{line}"
    );
    assert_eq!(executor.jobs().len(), 1);
}

/// The escalate policy (an import outside the allowlist asks a human),
/// running sessions.
fn escalate_policy() -> Policy {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/policies/escalate.yml");
    let text = std::fs::read_to_string(path).expect("escalate policy");
    Policy::from_yaml_str(
        &format!("{text}\nsession:\n  max_steps: 4\n"),
        "escalate-session",
    )
    .expect("policy")
}

/// The step the model writes after the look: it uses `paid` from step 1
/// and imports sympy, which the policy escalates.
const ESCALATED: &str = "import json\nimport sympy\n\
print(json.dumps({'paid_total': float(sympy.Integer(int(paid['amount'].sum())))}))\n";

#[tokio::test]
async fn an_approved_step_of_a_session_runs_after_the_steps_before_it() {
    // The session: a look, then a step that needs approval.
    let policy = escalate_policy();
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(format!(
        "Step: look\nPlan: the paid rows per quarter\n```python\n{EARLIER_LOOK}```"
    )));
    llm.push(Reply::text(format!(
        "Step: final\nPlan: sum exactly\n```python\n{ESCALATED}```"
    )));
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(EARLIER_OUT)]);
    let model = ModelClient::new(llm.config()).expect("model client");
    let agent = Agent {
        policy: &policy,
        sandbox: &executor,
        model: Some(&model),
        runtime: compute_bot::sandbox::Runtime::default(),
        progress: &|_| {},
    };
    let asked = Request {
        goal: Some("total paid, exactly".into()),
        inputs: vec![orders()],
        ..Request::default()
    };
    let waiting = agent.answer(asked).await.expect("a report");
    assert_eq!(waiting.status, ReportStatus::NeedsApproval, "{waiting:#?}");
    assert_eq!(waiting.code.as_deref(), Some(ESCALATED));
    assert_eq!(waiting.steps.len(), 1);

    // The approval (as `/compute approve` hands it over): the approved code
    // and the step that ran before it, with its recorded stdout hash.
    assert_eq!(
        waiting.steps[0].stdout_sha256,
        sha256_hex(EARLIER_OUT.as_bytes())
    );
    let approved = || Request {
        goal: Some("total paid, exactly".into()),
        code: Some(ESCALATED.into()),
        inputs: vec![orders()],
        approved_sha256: Some(sha256_hex(ESCALATED.as_bytes())),
        before: vec![EarlierStep {
            code: Some(waiting.steps[0].code.clone()),
            code_sha256: waiting.steps[0].code_sha256.clone(),
            stdout_sha256: waiting.steps[0].stdout_sha256.clone(),
            error: false,
        }],
        ..Request::default()
    };
    let executor = ScriptedExecutor::new(
        &policy,
        [
            Scripted::ok(EARLIER_OUT),
            Scripted::ok("{\"paid_total\": 22.0}\n"),
        ],
    );
    let agent = Agent {
        sandbox: &executor,
        model: None,
        ..agent
    };
    let report = agent.answer(approved()).await.expect("a report");
    assert_eq!(report.status, ReportStatus::Ok, "{report:#?}");
    assert_eq!(report.result, Some(json!({"paid_total": 22.0})));
    let jobs = executor.jobs();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert_eq!(executor.sessions(), 1);
    assert!(jobs.iter().all(|j| j.container == Some(1)));
    assert_eq!(jobs[0].code, EARLIER_LOOK);
    assert_eq!(jobs[1].code, ESCALATED);
    assert_eq!(report.steps.len(), 2);
    assert!(report.steps[1].result);
    assert_eq!(report.code.as_deref(), Some(ESCALATED));

    // The step before printing other output now: the approved code does not run.
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok("quarter\nQ2    10\n")]);
    let agent = Agent {
        sandbox: &executor,
        ..agent
    };
    let report = agent.answer(approved()).await.expect("a report");
    assert_ne!(report.status, ReportStatus::Ok);
    let why = report.stop_reason.as_deref().unwrap();
    assert!(
        why.contains("step 1 (the earlier step 1) printed other output than before the approval"),
        "{why}"
    );
    assert_eq!(executor.jobs().len(), 1, "the approved code did not run");
    assert_eq!(executor.sessions_ended(), executor.sessions());
}
