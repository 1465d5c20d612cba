//! The trigger read from real-shaped event payloads (tests/fixtures/github/).

use std::collections::BTreeMap;
use std::path::PathBuf;

use compute_bot::github::actions::event::{ActionEnv, EventError, Trigger};
use compute_bot::github::command::{self, Ask, Command};
use compute_bot::github::flow::{Screened, screen};
use compute_bot::policy::{Act, Authorization, Policy};

/// What the default policy ignores before any API call: the screening (not a
/// command), then the policy's authorization (a bot, an edit).
fn ignored(t: &Trigger) -> Option<String> {
    match screen(t, "/compute") {
        Screened::Ignore(r) => Some(r),
        Screened::Comment { author, .. } => match Policy::default().authorize(&author, Act::Run) {
            Authorization::Ignore(why) => Some(why.to_string()),
            Authorization::NeedsPermission(_) => None,
        },
        Screened::Workflow => None,
    }
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github")
        .join(name)
}

fn env(event: &str, file: &str, extra: &[(&str, &str)]) -> ActionEnv {
    let mut vars: BTreeMap<String, String> = [
        ("GITHUB_EVENT_NAME", event),
        ("GITHUB_REPOSITORY", "octo-org/data"),
        ("GITHUB_RUN_ID", "6001"),
        ("GITHUB_RUN_ATTEMPT", "2"),
        ("GITHUB_WORKSPACE", "/github/workspace"),
        ("GITHUB_API_URL", "https://ghe.example.com/api/v3/"),
        ("GITHUB_SERVER_URL", "https://ghe.example.com"),
        // Unset inputs arrive as empty strings.
        ("INPUT_GOAL", ""),
        ("INPUT_CODE", ""),
        ("INPUT_ISSUE", ""),
        ("INPUT_COMMAND", ""),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    vars.insert(
        "GITHUB_EVENT_PATH".into(),
        fixture(file).display().to_string(),
    );
    for (k, v) in extra {
        vars.insert(k.to_string(), v.to_string());
    }
    ActionEnv::from_map(&vars).unwrap()
}

#[test]
fn comment_on_an_issue() {
    let e = env("issue_comment", "issue_comment_created_issue.json", &[]);
    assert_eq!(e.api_url, "https://ghe.example.com/api/v3");
    assert_eq!(e.run_attempt, 2);
    assert_eq!(
        e.run_url(),
        "https://ghe.example.com/octo-org/data/actions/runs/6001"
    );
    let t = Trigger::from_env(&e).unwrap();
    let Trigger::Comment {
        repo,
        issue_number,
        is_pull_request,
        comment_id,
        author_login,
        author_is_bot,
        body,
        edited,
    } = t
    else {
        panic!("{t:?}")
    };
    assert_eq!(repo.to_string(), "octo-org/data");
    assert_eq!(issue_number, 7);
    assert!(!is_pull_request && !author_is_bot && !edited);
    assert_eq!(comment_id, 2541234567);
    assert_eq!(author_login, "alice");
    assert!(body.contains("\r\n"));
    // The CRLF body parses: options, goal, context and the exact code.
    let Some(Command::Run(Ask {
        options,
        goal,
        context,
        code,
    })) = command::parse(&body, &e.inputs.command)
    else {
        panic!("no command")
    };
    assert_eq!(options["inputs"], "data/sales 2026.csv");
    assert_eq!(goal, "mean and median of column price");
    assert_eq!(context, "Use only rows where region is EU.");
    let code = code.unwrap();
    assert!(code.starts_with("import csv, json, statistics\n"));
    assert!(!code.contains('\r'));
    assert_eq!(code.lines().count(), 4);
}

#[test]
fn comment_on_a_pull_request() {
    let t = Trigger::from_env(&env("issue_comment", "issue_comment_created_pr.json", &[])).unwrap();
    assert!(matches!(
        t,
        Trigger::Comment {
            issue_number: 8,
            is_pull_request: true,
            ..
        }
    ));
}

#[test]
fn edited_comment_is_marked_and_screened_out() {
    let t = Trigger::from_env(&env("issue_comment", "issue_comment_edited.json", &[])).unwrap();
    assert!(matches!(t, Trigger::Comment { edited: true, .. }));
    assert!(matches!(ignored(&t), Some(r) if r.contains("edited")));
}

#[test]
fn comment_without_the_command_is_screened_out() {
    let t = Trigger::from_env(&env("issue_comment", "issue_comment_no_command.json", &[])).unwrap();
    assert!(matches!(screen(&t, "/compute"), Screened::Ignore(_)));
}

#[test]
fn read_only_user_comment_needs_a_permission_check() {
    let t = Trigger::from_env(&env("issue_comment", "issue_comment_read_only.json", &[])).unwrap();
    assert!(matches!(
        screen(&t, "/compute"),
        Screened::Comment { ref author, .. } if author.login == "bob-reader"
    ));
    assert_eq!(ignored(&t), None);
}

#[test]
fn bot_comment_is_recognised() {
    let t = Trigger::from_env(&env("issue_comment", "issue_comment_bot.json", &[])).unwrap();
    assert!(matches!(
        t,
        Trigger::Comment {
            author_is_bot: true,
            ..
        }
    ));
    assert!(matches!(ignored(&t), Some(r) if r.contains("bots")));
}

#[test]
fn deleted_comment_and_other_events_are_ignored() {
    let t = Trigger::from_env(&env("issue_comment", "issue_comment_deleted.json", &[])).unwrap();
    assert!(matches!(t, Trigger::Ignored { reason } if reason.contains("deleted")));
    let t = Trigger::from_env(&env("push", "schedule.json", &[])).unwrap();
    assert!(matches!(t, Trigger::Ignored { reason } if reason.contains("push")));
}

#[test]
fn workflow_dispatch_reads_payload_inputs_and_action_inputs_win() {
    let t = Trigger::from_env(&env("workflow_dispatch", "workflow_dispatch.json", &[])).unwrap();
    assert_eq!(
        t,
        Trigger::Dispatch {
            goal: Some("total revenue per region".into()),
            code: None,
            inputs: vec!["data/sales.csv".into(), "data/regions.csv".into()],
            issue: Some(7),
        }
    );
    let t = Trigger::from_env(&env(
        "workflow_dispatch",
        "workflow_dispatch.json",
        &[("INPUT_GOAL", "median price"), ("INPUT_ISSUE", "#9")],
    ))
    .unwrap();
    assert!(matches!(
        t,
        Trigger::Dispatch { goal: Some(g), issue: Some(9), .. } if g == "median price"
    ));
}

#[test]
fn schedule_takes_everything_from_inputs() {
    let t = Trigger::from_env(&env(
        "schedule",
        "schedule.json",
        &[
            ("INPUT_GOAL", "weekly totals"),
            ("INPUT_ISSUE", "12"),
            ("INPUT_INPUTS", "data/a.csv\ndata/b.csv"),
        ],
    ))
    .unwrap();
    assert_eq!(
        t,
        Trigger::Schedule {
            goal: Some("weekly totals".into()),
            code: None,
            inputs: vec!["data/a.csv".into(), "data/b.csv".into()],
            issue: Some(12),
        }
    );
    // Without a goal or code, a schedule runs the repository's watches.
    let t = Trigger::from_env(&env("schedule", "schedule.json", &[])).unwrap();
    assert_eq!(t, Trigger::Watches { names: vec![] });
}

#[test]
fn malformed_event_file_names_path_and_position() {
    let err = Trigger::from_env(&env("issue_comment", "malformed.json", &[])).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            EventError::Parse {
                line: 7,
                column: 1,
                ..
            }
        ),
        "{msg}"
    );
    assert!(msg.contains("malformed.json"), "{msg}");
    assert!(msg.contains("line 7, column 1"), "{msg}");
}

#[test]
fn missing_event_file_names_the_path() {
    let err = Trigger::from_env(&env("issue_comment", "does-not-exist.json", &[])).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("does-not-exist.json") && msg.contains("GITHUB_EVENT_PATH"),
        "{msg}"
    );
}

#[test]
fn payload_missing_a_field_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("event.json");
    std::fs::write(
        &p,
        r#"{"action":"created","issue":{"number":3},"comment":{"id":5,"body":"/compute x"}}"#,
    )
    .unwrap();
    let mut e = env("issue_comment", "schedule.json", &[]);
    e.event_path = p;
    let msg = Trigger::from_env(&e).unwrap_err().to_string();
    assert!(msg.contains("comment.user.login"), "{msg}");
}
