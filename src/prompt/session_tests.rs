//! The session's reply format as careful (and careless) models write it,
//! and what the model is shown after a step.

use serde_json::json;

use super::*;
use crate::model::ChatReply;
use crate::sandbox::{Artifact, Limits};

fn text(t: &str) -> Result<Move, PromptError> {
    parse_move(&ChatReply {
        text: t.into(),
        ..ChatReply::default()
    })
}

fn run(m: Result<Move, PromptError>) -> (bool, Option<String>, String, Vec<String>) {
    match m {
        Ok(Move::Run {
            last,
            plan,
            code,
            assumed,
        }) => (last, plan, code, assumed),
        other => panic!("expected a step, got {other:?}"),
    }
}

#[test]
fn a_look_step_with_prose_and_a_marker_is_a_look() {
    let reply = "The preview shows only three rows, so I will check the status labels first.\n\n\
**Step:** look\nPlan: count the raw status values and the last rows\n\n```python\nimport pandas as pd\n\
df = pd.read_csv('/data/orders.csv')\nprint(df['status'].value_counts(dropna=False))\ndf.tail(3)\n```\n";
    let (last, plan, code, assumed) = run(text(reply));
    assert!(!last);
    assert_eq!(
        plan.as_deref(),
        Some("count the raw status values and the last rows")
    );
    assert!(code.starts_with("import pandas") && code.ends_with("df.tail(3)\n"));
    assert!(assumed.is_empty(), "{assumed:?}");
}

#[test]
fn a_final_step_by_marker_by_tag_and_by_tool() {
    let (last, ..) = run(text(
        "Step 2: final\nPlan: sum paid rows\n```python\nprint(json.dumps({'total': 1}))\n```",
    ));
    assert!(last);
    let (last, ..) = run(text("```python final\nx = 1\n```"));
    assert!(last, "the block's tag names the step");
    let reply = ChatReply {
        tool_call: Some((
            "python_step".into(),
            json!({"step": "look", "plan": "p", "code": "```python\ndf.head()\n```"}),
        )),
        ..ChatReply::default()
    };
    let (last, plan, code, _) = run(parse_move(&reply));
    assert!(!last);
    assert_eq!((plan.as_deref(), code.as_str()), (Some("p"), "df.head()\n"));
    // The one-program tool in a session is a final step.
    let reply = ChatReply {
        tool_call: Some((
            "run_python".into(),
            json!({"plan": "p", "code": "print(1)"}),
        )),
        ..ChatReply::default()
    };
    assert!(run(parse_move(&reply)).0);
}

#[test]
fn a_stop_carries_the_reason_in_the_models_words() {
    let m = text(
        "I looked at the columns.\n\nStep: stop\nReason: the file has no date column, so \
the Q2 revenue cannot be computed from it.",
    )
    .unwrap();
    assert_eq!(
        m,
        Move::Stop {
            reason: "the file has no date column, so the Q2 revenue cannot be computed from it."
                .into()
        }
    );
    let tool = ChatReply {
        tool_call: Some((
            "python_step".into(),
            json!({"step": "stop", "plan": "none", "reason": "This is a translation task."}),
        )),
        ..ChatReply::default()
    };
    assert_eq!(
        parse_move(&tool).unwrap(),
        Move::Stop {
            reason: "This is a translation task.".into()
        }
    );
    // The provider's refusal is a stop too, not a demand to write code.
    let refusal = ChatReply {
        refusal: Some("I can't help with that.".into()),
        ..ChatReply::default()
    };
    assert!(matches!(parse_move(&refusal), Ok(Move::Stop { .. })));
    // A marker inside code is no marker.
    let (last, ..) = run(text(
        "Step: look\n```python\n# Step: stop\nprint(df.shape)\n```",
    ));
    assert!(!last);
}

#[test]
fn without_a_marker_the_kind_is_inferred_and_said() {
    let (last, _, _, assumed) = run(text(
        "Here is the program:\n```python\nimport json\nprint(json.dumps({'n': 1}))\n```",
    ));
    assert!(last);
    assert!(assumed[0].contains("final step"), "{assumed:?}");
    let (last, _, _, assumed) = run(text("```python\nprint(df.dtypes)\n```"));
    assert!(!last);
    assert!(assumed[0].contains("look step"), "{assumed:?}");
}

#[test]
fn a_look_and_a_final_in_one_reply_run_the_look_only() {
    let reply = "Step: look\nPlan: see labels\n```python\nprint(df['status'].unique())\n```\n\n\
Then:\n\nStep: final\n```python\nprint(json.dumps({'total': 3}))\n```\n";
    let (last, plan, code, assumed) = run(text(reply));
    assert!(!last);
    assert_eq!(plan.as_deref(), Some("see labels"));
    assert_eq!(code, "print(df['status'].unique())\n");
    assert!(assumed[0].contains("only the look ran"), "{assumed:?}");
    // Two blocks of one kind: the last runs, and that is said.
    let (last, _, code, assumed) = run(text(
        "Step: final\nFor example `df.head()`:\n```python\ndf.head()\n```\nThe program:\n```python\nprint(json.dumps({}))\n```",
    ));
    assert!(last);
    assert_eq!(code, "print(json.dumps({}))\n");
    assert!(assumed[0].contains("2 python blocks"), "{assumed:?}");
}

#[test]
fn cut_open_and_empty_replies_fail_as_for_one_program() {
    let cut = ChatReply {
        text: "Step: look\n```python\nprint(1)\n```".into(),
        finish: crate::model::Finish::Length,
        max_tokens: 4096,
        ..ChatReply::default()
    };
    assert_eq!(
        parse_move(&cut).unwrap_err(),
        PromptError::Cut { budget: 4096 }
    );
    assert_eq!(
        text("Step: look\n```python\nprint(").unwrap_err(),
        PromptError::Unclosed
    );
    assert!(matches!(
        text("I think it is 42.").unwrap_err(),
        PromptError::NoCode { .. }
    ));
    assert_eq!(
        parse_move(&ChatReply::default()).unwrap_err(),
        PromptError::Empty
    );
}

fn outcome(stdout: &str, stderr: &str, status: RunStatus) -> Outcome {
    Outcome {
        status,
        stdout: stdout.into(),
        stderr: stderr.into(),
        duration_ms: 420,
        value: Some("shape: (120, 4)".into()),
        artifacts: vec![Artifact {
            name: "chart.png".into(),
            size: 1234,
            sha256: String::new(),
            bytes: Vec::new(),
        }],
        exit_code: Some(0),
        signal: None,
        collected_ms: 0,
        stdout_truncated: false,
        stderr_truncated: false,
        timed_out: false,
        oom_killed: false,
        image: Default::default(),
        limits: Limits::default(),
        resources: Default::default(),
        audit: Default::default(),
        code_sha256: String::new(),
        container: String::new(),
        notes: Vec::new(),
        tampered: Vec::new(),
        sources: Default::default(),
        environment: None,
        seccomp: None,
        step: Some(1),
    }
}

#[test]
fn an_observation_has_stdout_ends_the_value_the_traceback_and_the_files() {
    let long = (0..2000)
        .map(|i| format!("row {i}"))
        .collect::<Vec<_>>()
        .join("\n");
    let o = outcome(&long, "", RunStatus::Ok);
    let s = observe(1, false, &o, None, &[], DataLevel::Preview);
    assert!(s.starts_with("Step 1 (look) ran (420ms)."), "{s}");
    assert!(
        s.contains("<stdout>\nrow 0\n") && s.contains("row 1999\n</stdout>"),
        "{s}"
    );
    assert!(s.contains("characters cut"), "{s}");
    assert!(s.contains("<value>\nshape: (120, 4)\n</value>"), "{s}");
    assert!(
        s.contains("Files written to /out: chart.png (1234 bytes)"),
        "{s}"
    );
    assert!(
        s.chars().count() < STDOUT_CHARS + VALUE_CHARS + 600,
        "{}",
        s.len()
    );
    let tb = "Traceback (most recent call last):\n  File \"<step 2>\", line 1\nKeyError: 'paid'";
    let e = observe(
        2,
        true,
        &outcome("", tb, RunStatus::Error),
        None,
        &[],
        DataLevel::Preview,
    );
    assert!(e.contains("raised an error; the session goes on"), "{e}");
    assert!(e.contains("KeyError: 'paid'"), "{e}");
    // At `schema` no printed data leaves.
    let s = observe(1, false, &o, None, &[], DataLevel::Schema);
    assert!(!s.contains("row 0") && !s.contains("(120, 4)"), "{s}");
    assert!(s.contains("2000 lines (not shown"), "{s}");
}

#[test]
fn earlier_observations_are_shortened_oldest_first() {
    let big = |n: u32| {
        Turn::of(
            false,
            None,
            "df.head()",
            format!("Step {n} (look) ran.\n{}", "x".repeat(9_000)),
        )
    };
    let turns = vec![big(1), big(2), big(3)];
    let shown = within_budget(&turns);
    assert!(
        shown[0].chars().count() <= SHORTENED_CHARS + 80,
        "oldest first"
    );
    assert_eq!(shown[1], turns[1].observation, "the next one still fits");
    assert_eq!(shown[2], turns[2].observation, "the latest whole");
    let ctx = PromptContext::default();
    let req = step_request(
        &ctx,
        &turns,
        Budget {
            max_steps: 6,
            left: 3,
            code_time: std::time::Duration::from_secs(60),
        },
    );
    assert_eq!(req.messages.len(), 7);
    assert!(
        req.messages[1]
            .content
            .starts_with("Step: look\n```python\ndf.head()")
    );
    assert!(
        req.messages[6].content.ends_with("with a reason."),
        "{}",
        req.messages[6].content
    );
    assert!(
        req.system
            .contains("Look first when the data is unfamiliar or messy")
    );
    assert!(req.system.contains("`Step: stop`"));
    assert_eq!(req.tool.unwrap().name, "python_step");
}
