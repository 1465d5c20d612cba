//! Sessions of steps (issue 40): the model looks at the data, sees each
//! step's real output and works further, in one container, every step
//! checked. The model stand-in speaks the providers' wire format; its
//! replies are written as a careful model writes them (prose, a `Step:`
//! line, a plan, a block; sometimes several blocks). The container is the
//! in-memory [`ScriptedExecutor`], which records which container and which
//! step each job ran as.

use crate::support::llm_standin::{LlmStandin, Recorded, Reply};
use crate::support::scripted_executor::{Scripted, ScriptedExecutor};
use compute_bot::agent::{Agent, Request};
use compute_bot::model::ModelClient;
use compute_bot::policy::Policy;
use compute_bot::report::{Report, ReportStatus, StepKind};
use compute_bot::sandbox::{InputFile, RunStatus};
use serde_json::json;

/// A policy with `max_steps` steps, no model explanation, and a result
/// `{"paid_total": <number>}`.
fn policy(max_steps: u8) -> Policy {
    let yaml = format!(
        "version: 1
explain: false
session:
  max_steps: {max_steps}
output:
  schema:
    type: object
    required: [paid_total]
    properties:
      paid_total: {{type: number}}
"
    );
    Policy::from_yaml_str(&yaml, "session-test-policy").expect("policy")
}

/// The messy export: status labels vary, a total row at the end.
fn orders() -> InputFile {
    InputFile::new(
        "orders.csv",
        b"id,status,amount\n1,paid,10\n2,Paid,5\n3,payed,7\n4,refunded,3\n5,TOTAL,25\n".to_vec(),
    )
}

fn request() -> Request {
    Request {
        goal: Some("What is the total paid amount in orders.csv?".into()),
        inputs: vec![orders()],
        ..Request::default()
    }
}

/// Runs the loop; the report. Every prepared container was used or
/// discarded, and every session begun was ended.
async fn answer(policy: &Policy, executor: &ScriptedExecutor, llm: &LlmStandin) -> Report {
    let model = ModelClient::new(llm.config()).expect("model client");
    let agent = Agent {
        policy,
        sandbox: executor,
        model: Some(&model),
        runtime: compute_bot::sandbox::Runtime::default(),
        progress: &|_| {},
    };
    let report = agent.answer(request()).await.expect("a report");
    assert_eq!(executor.dropped(), 0, "a prepared container was forgotten");
    assert_eq!(executor.sessions_dropped(), 0, "a session was not ended");
    assert_eq!(
        executor.sessions_ended(),
        executor.sessions(),
        "every session begun is ended"
    );
    report
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

const LOOK: &str =
    "The preview shows five rows, but status labels in exports like this often vary, \
and the last row may be a total. I will look at the labels before deciding what counts as paid.

Step: look
Plan: read the file, print the raw status counts and the last rows

```python
import pandas as pd
df = pd.read_csv('/data/orders.csv')
print(df['status'].value_counts(dropna=False).to_string())
df.tail(2)
```
";

/// What the look printed, as the interpreter would.
const COUNTS: &str = "paid        1\nPaid        1\npayed       1\nrefunded    1\nTOTAL       1\n";

const FINAL: &str =
    "The labels `paid`, `Paid` and the misspelling `payed` all mean paid; `TOTAL` is a \
summary row, not an order. `df` is still loaded from step 1.

Step: final
Plan: normalise the labels, drop the total row, sum the paid amounts

```python
import json
status = df['status'].str.strip().str.lower()
paid = df[status.isin(['paid', 'payed'])]
print(json.dumps({'paid_total': float(paid['amount'].sum())}))
```
";

#[tokio::test]
async fn a_look_then_a_final_step_in_one_container_with_the_looks_real_output() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(LOOK).with_usage(900, 80));
    llm.push(Reply::text(FINAL).with_usage(1200, 90));
    let policy = policy(6);
    let executor = ScriptedExecutor::new(
        &policy,
        [
            Scripted::ok(COUNTS)
                .with_value("   id status  amount\n3   4  refunded  3\n4   5  TOTAL  25"),
            Scripted::ok("{\"paid_total\": 22.0}\n"),
        ],
    );
    let report = answer(&policy, &executor, &llm).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:#?}");
    assert_eq!(report.result, Some(json!({"paid_total": 22.0})));
    // The second request carries step 1's real output and value.
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    let seen = last_user(&reqs[1]);
    assert!(seen.contains("Step 1 (look) ran"), "{seen}");
    assert!(
        seen.contains("payed       1") && seen.contains("TOTAL       1"),
        "{seen}"
    );
    assert!(
        seen.contains("<value>") && seen.contains("TOTAL  25"),
        "{seen}"
    );
    assert!(seen.contains("5 steps are left"), "{seen}");
    let msgs = reqs[1].messages();
    assert!(
        msgs.iter().any(|(role, c)| role == "assistant"
            && c.contains("Step: look")
            && c.contains("value_counts")),
        "the model's own step is shown back: {msgs:?}"
    );
    // One container, one session: step 2 ran where step 1 did, using `df`.
    let jobs = executor.jobs();
    assert_eq!(jobs.len(), 2);
    assert_eq!((executor.prepared(), executor.sessions()), (1, 1));
    assert_eq!(executor.executed(), 0, "no one-program run");
    assert!(jobs.iter().all(|j| j.container == Some(1)), "{jobs:?}");
    assert_eq!(
        jobs.iter().map(|j| j.step).collect::<Vec<_>>(),
        [Some(1), Some(2)]
    );
    assert!(!jobs[0].options.unwrap().last && jobs[1].options.unwrap().last);
    assert!(jobs[1].code.contains("df['status']") && !jobs[1].code.contains("read_csv"));
    assert_eq!(jobs[0].inputs, ["orders.csv"]);
    // The report's steps: code, hashes, bounded output, the final one marked.
    assert_eq!(report.steps.len(), 2);
    let (look, last) = (&report.steps[0], &report.steps[1]);
    assert_eq!((look.kind, look.result), (StepKind::Look, false));
    assert_eq!((last.kind, last.result), (StepKind::Final, true));
    assert_eq!(look.stdout, COUNTS);
    assert_eq!(look.code, jobs[0].code);
    assert_eq!(report.code.as_deref(), Some(jobs[1].code.as_str()));
    // The answer's plan is the final step's (the look's is with its step).
    assert_eq!(
        report.plan.as_deref(),
        Some("normalise the labels, drop the total row, sum the paid amounts")
    );
    // Tokens of every step are in the usage.
    assert_eq!(report.usage.input_tokens, Some(2100));
    assert_eq!(report.usage.output_tokens, Some(170));
    // The system prompt says when steps help.
    let system = reqs[0].system_prompt().unwrap();
    assert!(
        system.contains("Look first when the data is unfamiliar or messy"),
        "{system}"
    );
    assert!(system.contains("A simple question on clean data is one final step"));
}

#[tokio::test]
async fn a_refused_step_reaches_the_model_as_an_observation_and_never_runs() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(
        "Step: look\nPlan: list the data folder\n```python\nimport subprocess\nprint(subprocess.run(['ls', '/data']))\n```",
    ));
    llm.push(Reply::text(LOOK));
    llm.push(Reply::text(FINAL));
    let policy = policy(6);
    let executor = ScriptedExecutor::new(
        &policy,
        [
            Scripted::ok(COUNTS),
            Scripted::ok("{\"paid_total\": 22.0}\n"),
        ],
    );
    let report = answer(&policy, &executor, &llm).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:#?}");
    let seen = last_user(&llm.requests()[1]);
    assert!(
        seen.contains("The policy refused this step before it ran"),
        "{seen}"
    );
    assert!(
        seen.contains("line 1") && seen.contains("subprocess"),
        "{seen}"
    );
    assert!(executor.codes().iter().all(|c| !c.contains("subprocess")));
    assert_eq!(executor.sessions(), 1);
    assert_eq!(report.attempts.len(), 3, "the refused turn counts");
    assert_eq!(report.steps.len(), 2, "but did not run");
    assert!(
        report.attempts[0]
            .failure
            .as_deref()
            .unwrap()
            .contains("denied")
    );
}

#[tokio::test]
async fn a_stop_before_any_step_is_a_controlled_stop_and_nothing_runs() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(
        "This asks for a translation of the release notes into German; there is nothing to compute.\n\n\
Step: stop\nReason: the goal is a purely textual task (a translation), so no computation fits it.",
    ));
    let policy = policy(6);
    let executor = ScriptedExecutor::new(&policy, []);
    let report = answer(&policy, &executor, &llm).await;
    assert_eq!(report.status, ReportStatus::Failed);
    let reason = report.stop_reason.as_deref().unwrap();
    assert!(
        reason.starts_with("the model stopped without a result, before any step ran"),
        "{reason}"
    );
    assert!(
        reason.contains("a purely textual task (a translation)"),
        "{reason}"
    );
    assert!(executor.jobs().is_empty() && executor.sessions() == 0);
    assert_eq!(
        executor.discarded(),
        1,
        "the container prepared meanwhile is removed"
    );
    assert_eq!(llm.requests().len(), 1, "no program is forced");
    assert!(report.outcome.is_none() && report.steps.is_empty());
}

#[tokio::test]
async fn a_stop_after_a_look_names_the_step_that_ran() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(LOOK));
    llm.push(Reply::text(
        "**Step:** stop\n**Reason:** the file has no date column, so the Q2 total the goal asks for \
cannot be computed from it.",
    ));
    let policy = policy(6);
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok(COUNTS)]);
    let report = answer(&policy, &executor, &llm).await;
    assert_eq!(report.status, ReportStatus::Failed);
    let reason = report.stop_reason.as_deref().unwrap();
    assert!(reason.contains("after step 1 (look)"), "{reason}");
    assert!(reason.contains("the file has no date column"), "{reason}");
    assert_eq!((executor.sessions(), executor.sessions_ended()), (1, 1));
    assert_eq!(report.steps.len(), 1);
}

#[tokio::test]
async fn a_crashing_step_is_repaired_from_the_same_state() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(LOOK));
    llm.push(Reply::text(
        "Step: final\nPlan: sum the paid rows\n```python\nimport json\nprint(json.dumps({'paid_total': float(df[df.state == 'paid'].amount.sum())}))\n```",
    ));
    llm.push(Reply::text(
        "The column is `status`, not `state`; `df` is still loaded.\n\n".to_string() + FINAL,
    ));
    let policy = policy(6);
    let traceback = "Traceback (most recent call last):\n  File \"<step 2>\", line 2, in <module>\nAttributeError: 'DataFrame' object has no attribute 'state'\n";
    let executor = ScriptedExecutor::new(
        &policy,
        [
            Scripted::ok(COUNTS),
            Scripted::error(traceback),
            Scripted::ok("{\"paid_total\": 22.0}\n"),
        ],
    );
    let report = answer(&policy, &executor, &llm).await;
    assert_eq!(report.status, ReportStatus::Ok, "{report:#?}");
    let seen = last_user(&llm.requests()[2]);
    assert!(
        seen.contains("Step 2 (final) raised an error; the session goes on"),
        "{seen}"
    );
    assert!(seen.contains("no attribute 'state'"), "{seen}");
    let jobs = executor.jobs();
    assert_eq!(
        jobs.iter()
            .map(|j| (j.container, j.step))
            .collect::<Vec<_>>(),
        [(Some(1), Some(1)), (Some(1), Some(2)), (Some(1), Some(3))],
        "the repair ran in the same interpreter"
    );
    assert!(!jobs[2].code.contains("read_csv"), "nothing reloaded");
    assert_eq!(report.steps[1].status, RunStatus::Error);
    assert!(report.steps[2].result);
    assert!(report.attempts[1].failure.is_some());
}

#[tokio::test]
async fn a_tampered_step_ends_the_session_tampered() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text(LOOK));
    llm.push(Reply::text(FINAL));
    let policy = policy(6);
    let executor = ScriptedExecutor::new(
        &policy,
        [
            Scripted::ok(COUNTS),
            Scripted::new(RunStatus::Tampered, "{\"paid_total\": 1e9}\n", ""),
        ],
    );
    let report = answer(&policy, &executor, &llm).await;
    assert_eq!(report.status, ReportStatus::Failed);
    assert!(report.result.is_none());
    let reason = report.stop_reason.as_deref().unwrap();
    assert!(
        reason.starts_with("step 2:") && reason.contains("tampered"),
        "{reason}"
    );
    assert_eq!(report.outcome.as_ref().unwrap().status, RunStatus::Tampered);
    assert_eq!(llm.requests().len(), 2, "no model is asked to try again");
    assert_eq!((executor.sessions(), executor.sessions_ended()), (1, 1));
}

#[tokio::test]
async fn the_step_budget_is_the_repair_budget() {
    let llm = LlmStandin::openai().await;
    for _ in 0..3 {
        llm.push(Reply::text(LOOK));
    }
    let policy = policy(3);
    let executor = ScriptedExecutor::new(
        &policy,
        [
            Scripted::ok(COUNTS),
            Scripted::ok(COUNTS),
            Scripted::ok(COUNTS),
        ],
    );
    let report = answer(&policy, &executor, &llm).await;
    assert_eq!(report.status, ReportStatus::Failed);
    assert!(
        report
            .stop_reason
            .as_deref()
            .unwrap()
            .contains("used its 3 steps"),
        "{report:#?}"
    );
    assert_eq!(llm.requests().len(), 3);
    let last = last_user(&llm.requests()[2]);
    assert!(
        last.contains("One step is left: it must be the final step"),
        "{last}"
    );
}

#[tokio::test]
async fn max_steps_1_runs_one_program_as_before() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code(
        "Normalise the labels and sum the paid rows.",
        "import json\nimport pandas as pd\ndf = pd.read_csv('/data/orders.csv')\nprint(json.dumps({'paid_total': 22.0}))",
    ));
    let policy = policy(1);
    let executor = ScriptedExecutor::new(&policy, [Scripted::ok("{\"paid_total\": 22.0}\n")]);
    let report = answer(&policy, &executor, &llm).await;
    assert_eq!(report.status, ReportStatus::Ok);
    assert_eq!((executor.executed(), executor.sessions()), (1, 0));
    assert!(report.steps.is_empty());
    let system = llm.requests()[0].system_prompt().unwrap();
    assert!(system.contains("You write one self-contained Python 3 program"));
    assert!(!system.contains("Step: look"));
}
