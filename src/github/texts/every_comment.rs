//! A snapshot of every kind of comment, reply and summary the bot writes
//! on GitHub (as rust-lang/bors keeps them): a change of wording is one
//! reviewed diff under `snapshots/`. Every input is fixed, so the texts are
//! the same on every run.

use std::collections::BTreeMap;

use insta::assert_snapshot;
use serde_json::json;

use super::*;
use crate::admit::Refused;
use crate::github::command::Subcommand;

const RUN_URL: &str = "https://github.com/octo-org/data/actions/runs/42";
const ANSWER_URL: &str = "https://github.com/octo-org/data/issues/7#issuecomment-1001";
const SHA: &str = "7f722b92796c4b1a2f0e5d3c8a9b6e1f0d2c4b6a8e0f1d3c5b7a9e1f3d5c7b9a";
const CODE: &str = "import json\nprint(json.dumps({\"total\": 42}))\n";

/// A report with `status` and [`CODE`] (with its real hash); `verdict` as JSON.
fn report(status: &str, verdict: serde_json::Value) -> Report {
    serde_json::from_value(json!({
        "goal": "total of amount", "plan": "Sum the `amount` column.", "status": status,
        "stop_reason": null, "result": null, "explanation": null, "attempts": [],
        "code": CODE, "code_sha256": sha256_hex(CODE), "verdict": verdict, "outcome": null,
        "inputs": [], "policy": null, "usage": {"input_tokens": 0, "output_tokens": 0},
        "timings_ms": {}
    }))
    .expect("a report")
}

fn escalating() -> serde_json::Value {
    json!({"decision": "escalate", "findings": [{
        "rule": "import-escalate", "severity": "escalate",
        "message": "imports `hashlib`, outside the allowlist", "line": 1, "column": 1,
        "snippet": "import hashlib"
    }]})
}

fn refused(path: &str, problem: &str) -> Refused {
    Refused {
        path: path.into(),
        problem: problem.into(),
    }
}

#[test]
fn acknowledged_comment() {
    assert_snapshot!(acknowledged(&run_marker("42"), Some(RUN_URL)));
}

#[test]
fn progress_comment() {
    assert_snapshot!(progress(
        &run_marker("42"),
        Step::Running,
        2,
        3,
        Some("pulling the sandbox image: 40 of 120 MB"),
        Some(RUN_URL)
    ));
}

#[test]
fn refusals() {
    let command = "/compute";
    assert_snapshot!(
        "refused_permission",
        refused_permission("rita", Permission::Read, Permission::Write, command)
    );
    assert_snapshot!("refused_not_listed", refused_not_listed("bob", command));
    assert_snapshot!(
        "refused_approval",
        refused_approval("alice", Permission::Maintain, command)
    );
    assert_snapshot!(
        "refused_not_approver",
        refused_not_approver("alice", "deny", command)
    );
    assert_snapshot!(
        "refused_deny",
        refused_deny("alice", Permission::Maintain, command)
    );
}

#[test]
fn usage_reply() {
    assert_snapshot!(usage("/compute"));
}

#[test]
fn reply_summary_of_a_reply() {
    assert_snapshot!(reply_summary(&usage("/compute")));
}

#[test]
fn malformed_subcommand_replies() {
    let cases = [
        (Subcommand::Approve, "7f72"),
        (Subcommand::Deny, "it now"),
        (Subcommand::Run, "extra"),
        (Subcommand::Replay, "nonsense"),
        (Subcommand::Watch, ""),
    ];
    for (subcommand, given) in cases {
        assert_snapshot!(
            format!("malformed_{}", subcommand.word()),
            malformed_subcommand(subcommand, given, "/compute")
        );
    }
}

#[test]
fn stops() {
    let stop = |title: &str, details: &str| stopped(title, details, RUN_URL);
    assert_snapshot!(
        "stop_who_asked",
        stop(
            stop::WHO_ASKED,
            &stop::error_details("HTTP 502 Bad Gateway")
        )
    );
    assert_snapshot!(
        "stop_thread_unreadable",
        stop(
            stop::THREAD_UNREADABLE,
            &stop::error_details("HTTP 404 Not Found")
        )
    );
    assert_snapshot!(
        "stop_not_closed",
        stop(stop::NOT_CLOSED, &stop::error_details("HTTP 403 Forbidden"))
    );
    assert_snapshot!(
        "stop_sandbox_unavailable",
        stop(
            stop::SANDBOX_UNAVAILABLE,
            &stop::sandbox_unavailable("cannot connect to the Docker daemon")
        )
    );
    assert_snapshot!(
        "stop_not_started",
        stop(
            stop::NOT_STARTED,
            &stop::error_details("the model gave no code")
        )
    );
    assert_snapshot!(
        "stop_github_data_unusable",
        stop(
            stop::GITHUB_DATA_UNUSABLE,
            &stop::github_data_unusable(&["`github:issues` is over the request budget".into()])
        )
    );
    assert_snapshot!(
        "stop_inputs_unusable",
        stop(
            stop::INPUTS_UNUSABLE,
            &stop::inputs_unusable(&[
                refused("data/missing.csv", "does not exist in the checkout"),
                refused("../secret.txt", "is outside the checkout"),
            ])
        )
    );
    assert_snapshot!(
        "stop_data_changed",
        stop(
            stop::DATA_CHANGED,
            &inputs_changed(&["data/sales.csv".into()], "/compute")
        )
    );
    assert_snapshot!(
        "stop_model_unusable",
        stop(
            stop::MODEL_UNUSABLE,
            &stop::model_unusable("COMPUTE_BOT_PROVIDER is `gpt`, not a provider")
        )
    );
    assert_snapshot!(
        "stop_no_model_no_code",
        stop(stop::NO_MODEL_NO_CODE, NO_MODEL_ACTION_HELP)
    );
}

#[test]
fn watch_run_errors() {
    let lines = [
        stop::inputs_unusable_line(&[refused("data/a.csv", "does not exist in the checkout")]),
        stop::github_data_unusable_line(&["the token may not read issues".into()]),
        watch_run_ended("failed"),
        watch_not_pinned(SHA, &"0".repeat(64), ".github/compute/sales.yml"),
        watch_no_workspace("disk full"),
        watch_inputs_unreadable("abc1234", "HTTP 404"),
    ];
    assert_snapshot!(lines.join("\n"));
}

#[test]
fn could_not_start_summary() {
    assert_snapshot!(could_not_start("GITHUB_EVENT_PATH is not set"));
}

#[test]
fn policy_unusable_summary() {
    assert_snapshot!(policy_unusable(
        ".github/compute-bot.yml:3:5: unknown field `whoo`",
        ".github/compute-bot.yml"
    ));
}

#[test]
fn approval_block_of_a_needs_approval_answer() {
    let r = report("needs_approval", escalating());
    assert_snapshot!(approval_for(&r, "/compute").expect("an approval block"));
}

#[test]
fn approval_block_of_a_step_escalated_in_a_session() {
    let look = "import pandas as pd\ndf = pd.read_csv('/data/a.csv')\nprint(len(df))\n";
    let crash = "print(df.amout.sum())\n";
    let step = |number: u32, code: &str, stdout: &str, status: &str| {
        json!({"number": number, "attempt": number, "kind": "look", "code": code,
            "code_sha256": sha256_hex(code), "stdout": stdout,
            "stdout_sha256": sha256_hex(stdout), "status": status, "duration_ms": 10})
    };
    let mut r = report("needs_approval", escalating());
    r.steps = serde_json::from_value(json!([
        step(1, look, "12\n", "ok"),
        step(2, crash, "", "error")
    ]))
    .expect("steps");
    let block = approval_for(&r, "/compute").expect("an approval block");
    assert_snapshot!(block);
    // The approval reads the code waiting and the clean step before it back.
    let body = format!("answer\n{block}");
    assert_eq!(read_pending(&body).expect("the code").code, CODE);
    let before = read_before(&body).expect("the steps before");
    assert_eq!(
        before,
        [StepBefore {
            code: look.to_string(),
            stdout_sha256: sha256_hex("12\n"),
        }]
    );
    // An edited step is refused; a comment without steps has none.
    let edited = body.replace("print(len(df))", "print(len(df)); import os");
    assert!(matches!(
        read_before(&edited),
        Err(PendingError::Mismatch { .. })
    ));
    assert_eq!(read_before("no markers"), Ok(Vec::new()));
}

#[test]
fn approval_replies() {
    assert_snapshot!("nothing_pending", nothing_pending("maint", "/compute"));
    assert_snapshot!(
        "approval_invalid",
        approval_invalid(&approval_names_other_code("00000000", SHA))
    );
    assert_snapshot!("approved_by", approved_by("maint", SHA));
    assert_snapshot!("approved_run", approved_run("maint", ANSWER_URL, SHA));
    assert_snapshot!("denied", denied("maint"));
    assert_snapshot!("denied_summary", denied_summary("maint"));
}

#[test]
fn plan_block_of_a_plan() {
    let r = report("planned", json!({"decision": "allow", "findings": []}));
    assert_snapshot!(plan_for(&r, "/compute").expect("a plan block"));
}

#[test]
fn plan_replies() {
    assert_snapshot!("nothing_planned", nothing_planned("alice", "/compute"));
    assert_snapshot!(
        "plan_edited",
        plan_invalid(&plan_edited(ANSWER_URL), "/compute")
    );
    assert_snapshot!(
        "plan_unreadable",
        plan_invalid(
            &plan_unreadable(ANSWER_URL, "the code does not match its sha256"),
            "/compute"
        )
    );
    assert_snapshot!(
        "plan_names_other_code",
        plan_invalid(&plan_names_other_code("00000000", SHA), "/compute")
    );
    assert_snapshot!("planned_run", planned_run("alice", ANSWER_URL, SHA));
}

#[test]
fn explanation_follows_note() {
    assert_snapshot!(
        "explanation_follows",
        explanation_follows(std::time::Duration::from_secs(45))
    );
}

#[test]
fn follow_up_lines() {
    assert_snapshot!("follows_up", follows_up(ANSWER_URL, &[]));
    assert_snapshot!(
        "follows_up_with_inputs",
        follows_up(ANSWER_URL, &["data/sales.csv".into()])
    );
}

#[test]
fn github_data_lines() {
    let here = data_fetched_here(3, 20, Some(SHA));
    assert_snapshot!(
        "github_data_line",
        github_data_line(
            &[("github:issues state=open", 12)],
            &here,
            &[("issues.csv", "the first 100 comments of each issue only")]
        )
    );
    assert_snapshot!(
        "github_data_in_the_artifact",
        data_fetched_here(1, 20, None)
    );
    let (runs, commits) = (["7101".to_string()], [SHA.to_string()]);
    assert_snapshot!(
        "github_data_origins",
        [
            data_from_snapshot(&runs, Some("2026-01-05T06:00:00Z"), &commits),
            data_unchanged(&runs, None, 3, &commits),
            data_afresh("the snapshot is gone"),
        ]
        .join("\n---\n")
    );
}

#[test]
fn files_parts() {
    let files = [
        ShownFile {
            name: "chart.png".into(),
            size: 20480,
            image: true,
            url: Some("https://github.com/octo-org/data/blob/abc/chart.png?raw=true".into()),
        },
        ShownFile {
            name: "table.csv".into(),
            size: 512,
            image: false,
            url: Some("https://github.com/octo-org/data/blob/abc/table.csv?raw=true".into()),
        },
    ];
    let home = FilesHome::Committed {
        branch: "compute-bot-assets".into(),
        sha: "abcdef0123456789".into(),
        commit_url: "https://github.com/octo-org/data/commit/abcdef0123456789".into(),
    };
    let caps = files_over_caps(2, "5 MiB");
    let left = [("big.bin".to_string(), 8 << 20)];
    assert_snapshot!(
        "files_committed",
        files_md(&files, &home, &left, &caps, RUN_URL, &[])
    );
    let home = FilesHome::ArtifactOnly {
        reason: FILES_NO_WRITE.into(),
    };
    assert_snapshot!(
        "files_in_the_artifact",
        files_md(&files, &home, &[], &caps, RUN_URL, &[])
    );
    assert_snapshot!(
        "files_commit_messages",
        format!(
            "{}\n---\n{}\n---\n{}",
            files_commit_message("42", 1, RUN_URL),
            data_commit_message("42", 1, RUN_URL),
            files_write_failed("HTTP 422")
        )
    );
}

#[test]
fn replay_verdicts() {
    let notes = vec![replay_data_from_snapshot(
        &["github:issues".into()],
        "read back from the run's snapshot",
        "/compute",
    )];
    assert_snapshot!(
        "reproduced",
        reproduced(ANSWER_URL, SHA, Some(SHA), 812, 790, &notes)
    );
    assert_snapshot!(
        "differs",
        differs(
            ANSWER_URL,
            &["result: /total 42 → 43".into()],
            &[replay_data_afresh(4, "the snapshot is gone")]
        )
    );
    assert_snapshot!(
        "cannot_replay",
        cannot_replay(
            ANSWER_URL,
            &[
                "input data/sales.csv changed".into(),
                replay_not_allowed_now(false, "/compute"),
            ]
        )
    );
    assert_snapshot!(
        "replay_thread_unreadable",
        replay_thread_unreadable("HTTP 502")
    );
    assert_snapshot!("nothing_to_replay", nothing_to_replay("/compute"));
    assert_snapshot!(
        "replay_data_notes",
        replay_notes(&[
            replay_data_unchanged(
                &["github:issues".into()],
                "unchanged since the run (HTTP 304)"
            ),
            replay_data_fetched(2, "/compute"),
        ])
    );
}

fn values() -> BTreeMap<String, serde_json::Value> {
    BTreeMap::from([
        ("/rows".to_string(), json!(2)),
        ("/total".to_string(), json!(42)),
    ])
}

#[test]
fn watch_sticky_comment() {
    // Numbers as an answer writes them: separators, money to the cent.
    let values = BTreeMap::from([
        ("/rows".to_string(), json!(1204)),
        ("/total_revenue".to_string(), json!(111797.4)),
    ]);
    let checks = [CheckView {
        check: "total_revenue > 40",
        passed: true,
        error: None,
    }];
    let older = BTreeMap::from([("/total_revenue".to_string(), json!(100000.5))]);
    let history = [
        HistoryRow {
            at: "2026-01-05 06:00",
            values: &older,
            failing: 0,
            error: None,
        },
        HistoryRow {
            at: "2026-01-12 06:00",
            values: &values,
            failing: 0,
            error: None,
        },
    ];
    let state = watch_state_marker(br#"{"runs":2}"#);
    let (before, after) = (json!(100000.5), json!(111797.4));
    let moved = Moved {
        values: vec![("/total_revenue", Some(&before), Some(&after))],
        started_failing: vec![],
        stopped_failing: vec![],
        result: None,
    };
    let chart = "```mermaid\nxychart-beta\n    line [100000.5, 111797.4]\n```\n";
    assert_snapshot!(watch_sticky(&Sticky {
        name: "sales",
        file: ".github/compute/sales.yml",
        code_sha256: Some(SHA),
        values: &values,
        checks: &checks,
        error: None,
        history: &history,
        tolerance: 0.05,
        run_url: RUN_URL,
        state: &state,
        chart: Some(chart),
        moved: Some(&moved),
    }));
}

#[test]
fn watch_sticky_first_run_and_failures() {
    let values = values();
    let failing = [CheckView {
        check: "total < 40",
        passed: false,
        error: Some("the expression is false"),
    }];
    let first = [HistoryRow {
        at: "2026-01-05 06:00",
        values: &values,
        failing: 1,
        error: None,
    }];
    let state = watch_state_marker(b"{}");
    let sticky = |checks, error, history| Sticky {
        name: "sales",
        file: ".github/compute/sales.yml",
        code_sha256: None,
        values: &values,
        checks,
        error,
        history,
        tolerance: 0.0,
        run_url: RUN_URL,
        state: &state,
        chart: None,
        moved: None,
    };
    let empty = BTreeMap::new();
    let none = [HistoryRow {
        at: "2026-01-05 06:00",
        values: &empty,
        failing: 0,
        error: Some("the model is unavailable"),
    }];
    let no_result = Sticky {
        values: &empty,
        ..sticky(&[], Some("the model is unavailable"), &none)
    };
    assert_snapshot!(
        [
            watch_sticky(&sticky(&failing, None, &first)),
            watch_sticky(&no_result),
        ]
        .join("\n---\n")
    );
}

#[test]
fn watch_notification_comment() {
    let (before, after) = (json!(40), json!(42));
    let moved = Moved {
        values: vec![("/total", Some(&before), Some(&after))],
        started_failing: vec![("rows > 2", "the expression is false")],
        stopped_failing: vec!["total > 40"],
        result: None,
    };
    assert_snapshot!(watch_notification("sales", ANSWER_URL, &moved));
}

#[test]
fn watch_pull_request_comment() {
    let (base, head) = (
        values(),
        BTreeMap::from([("/total".to_string(), json!(50))]),
    );
    let checks = [CheckView {
        check: "total < 45",
        passed: false,
        error: Some("the expression is false"),
    }];
    let compared = [Compared {
        name: "sales",
        file: ".github/compute/sales.yml",
        base: &base,
        head: &head,
        base_error: None,
        head_error: None,
        checks: &checks,
        changed_inputs: vec!["data/sales.csv"],
    }];
    assert_snapshot!(watch_pull_request(
        "1111111aaaa",
        "2222222bbbb",
        &compared,
        RUN_URL
    ));
}

#[test]
fn watch_replies_and_summaries() {
    assert_snapshot!(
        "watch_file_reply",
        watch_file_reply("sales", ANSWER_URL, "name: sales\ncode: |\n  print(1)\n")
    );
    assert_snapshot!(
        "watch_file_unavailable",
        watch_file_unavailable(NO_RESULT_IN_THREAD, "/compute")
    );
    assert_snapshot!(
        "watch_summary",
        [
            watch_summary("sales", &values(), &[], None, Some(ANSWER_URL)),
            watch_summary(
                "sales",
                &values(),
                &[CheckView {
                    check: "total < 40",
                    passed: false,
                    error: Some("the expression is false"),
                }],
                None,
                None
            ),
            watch_summary("sales", &BTreeMap::new(), &[], Some("no model"), None),
        ]
        .join("\n---\n")
    );
    assert_snapshot!(
        "watch_files_unusable",
        watch_files_unusable(&["- `.github/compute/a.yml:2:1: unknown field`".into()])
    );
    assert_snapshot!(
        "watch_configuration",
        [
            nothing_to_watch(".github/compute"),
            unknown_watches(&[&"weekly".to_string()], ".github/compute", &["sales"]),
            pull_unreadable(8, "HTTP 404"),
            pull_files_unreadable(8, "HTTP 502"),
            watch_files_unreadable("HTTP 403"),
            pull_comment_unposted("HTTP 403"),
        ]
        .join("\n---\n")
    );
}

/// The titles of stops come from [`stop`]: no handler writes one in place
/// (`Stop::github(<title>, ..)`, `Stop::new(<status>, <title>, ..)`).
#[test]
fn no_stop_title_is_written_outside_the_texts() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/github");
    let mut dirs = vec![dir];
    let mut bad = Vec::new();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.ends_with("texts") || p.ends_with("texts.rs") {
                continue;
            }
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            let github = compact.split("Stop::github(").skip(1);
            let new = compact
                .split("Stop::new(")
                .skip(1)
                .filter_map(|rest| rest.split_once(',').map(|(_, title)| title));
            for title in github.chain(new).filter(|t| t.starts_with('"')) {
                let shown: String = title.chars().take(40).collect();
                bad.push(format!("{}: {shown}", p.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "a stop title outside texts::stop:\n{}",
        bad.join("\n")
    );
}
