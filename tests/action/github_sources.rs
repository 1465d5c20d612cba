//! The repository's own activity as data (`github:` sources) end to end:
//! the real binary, the GitHub stand-in serving the list endpoints in their
//! real shapes with hundreds of pull requests, and the real sandbox.

use chrono::{DateTime, TimeZone, Utc};

use crate::support::action_fixture::{ActionFixture, COMMENT, REPO, fenced, snapshot_comment};
use crate::support::github_activity::{Activity, generate};

/// Median hours from opening to the first submitted review, over the
/// pull requests that have one: the code the comment runs.
const FIRST_REVIEW: &str = r#"import json
import pandas as pd
p = pd.read_csv("/data/github/pulls.csv")
r = pd.read_csv("/data/github/reviews.csv").dropna(subset=["submitted_at"])
first = r.groupby("pull_number")["submitted_at"].min().rename("first_review")
p = p.set_index("number").join(first, how="inner")
hours = (pd.to_datetime(p["first_review"]) - pd.to_datetime(p["created_at"])).dt.total_seconds() / 3600
print(json.dumps({"median_hours": float(hours.median()), "pulls": int(len(p)), "rows": int(len(pd.read_csv("/data/github/pulls.csv"))), "reviewed": int(pd.read_csv("/data/github/pulls.csv")["reviews_fetched"].sum()), "sized": int(pd.read_csv("/data/github/pulls.csv")["additions"].notna().sum())}))
"#;

fn policy(sources: &str, max_requests: u32) -> String {
    format!("version: 1\ninputs:\n  github: [{sources}]\n  github_max_requests: {max_requests}\n")
}

/// The same metric from the stand-in's data, computed here: closed pull
/// requests updated since `since`, hours to their first submitted review.
fn expected(a: &Activity, since: DateTime<Utc>) -> (f64, usize, usize) {
    let chosen: Vec<_> = a
        .pulls
        .iter()
        .filter(|p| p.state == "closed" && p.updated_at >= since)
        .collect();
    let mut hours: Vec<f64> = chosen
        .iter()
        .filter_map(|p| {
            let first = a
                .reviews
                .iter()
                .filter(|r| r.pull == p.number)
                .filter_map(|r| r.submitted_at)
                .min()?;
            Some((first - p.created_at).num_seconds() as f64 / 3600.0)
        })
        .collect();
    hours.sort_by(f64::total_cmp);
    let n = hours.len();
    let median = if n % 2 == 1 {
        hours[n / 2]
    } else {
        (hours[n / 2 - 1] + hours[n / 2]) / 2.0
    };
    (median, n, chosen.len())
}

/// The list pages a walk newest-first by update reads before it meets the
/// first pull request older than `since` (or the list ends).
fn pages_read(a: &Activity, since: DateTime<Utc>) -> usize {
    let mut closed: Vec<_> = a.pulls.iter().filter(|p| p.state == "closed").collect();
    closed.sort_by(|x, y| {
        y.updated_at
            .cmp(&x.updated_at)
            .then(y.number.cmp(&x.number))
    });
    let k = closed.iter().take_while(|p| p.updated_at >= since).count();
    if k < closed.len() {
        k / 100 + 1
    } else {
        closed.len().div_ceil(100).max(1)
    }
}

fn result_of(run: &crate::support::ActionRun) -> serde_json::Value {
    serde_json::from_str(run.out("result")).unwrap_or_else(|e| panic!("{e}\n{}", run.log()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn median_hours_to_first_review_matches_an_independent_computation() {
    let f = ActionFixture::builder()
        .policy(&policy("pulls, reviews", 1000))
        .start()
        .await;
    let data = generate(400, 0, 7);
    f.gh.set_activity(REPO, data.clone());
    // A secondary rate limit on the way, waited out as GitHub asks.
    f.gh.set_secondary_limit(403, Some(1), std::time::Duration::from_secs(1), 1);
    let since = Utc.with_ymd_and_hms(2026, 10, 1, 0, 0, 0).unwrap();
    f.comment(
        "alice",
        &format!(
            "/compute inputs=github:pulls?state=closed&since=2026-10-01,github:reviews median hours to first review\n{}",
            fenced(FIRST_REVIEW)
        ),
    );
    let run = f.run(COMMENT, "7001").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let got = result_of(&run);
    let (median, pulls, rows) = expected(&data, since);
    assert!(
        pulls > 100 && rows > 100,
        "a data set of hundreds: {pulls} of {rows}"
    );
    assert_eq!(got["pulls"], pulls);
    assert_eq!(got["rows"], rows);
    assert!(
        (got["median_hours"].as_f64().unwrap() - median).abs() < 1e-9,
        "{got} vs {median}"
    );
    // Every row has its reviews and its size (the budget sufficed).
    assert_eq!(
        (got["reviewed"].as_u64(), got["sized"].as_u64()),
        (Some(rows as u64), Some(rows as u64))
    );
    // Paged by Link at 100 a page, stopping at the first older pull request.
    let list_pages =
        f.gh.requests()
            .iter()
            .filter(|s| s.path.contains("/pulls?") && s.status == 200)
            .count();
    assert_eq!(list_pages, pages_read(&data, since));
    assert!(
        f.gh.requests()
            .iter()
            .filter(|s| s.path.contains("/pulls?"))
            .all(|s| s.path.contains("per_page=100"))
    );
    assert_eq!(
        f.gh.count("GET", "/reviews"),
        rows,
        "one reviews request per pull request"
    );
    let answer = &f.bot_comments(7)[0].body;
    assert!(
        answer.contains("github:pulls?state=closed&amp;since=2026-10-01")
            || answer.contains("github:pulls?state=closed&since=2026-10-01"),
        "{answer}"
    );
    // The audit names the files in the bot's folder as the code opened them.
    assert!(
        answer.contains("/data/github/pulls.csv (r)")
            && answer.contains("/data/github/reviews.csv (r)"),
        "{answer}"
    );
}

/// A workspace file cannot take the bot's folder: `github` is refused at
/// admission naming the file, while `github_pulls.csv` (the old flat name)
/// is an ordinary input beside `/data/github/pulls.csv`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_file_sits_beside_the_bots_github_folder_and_cannot_take_it() {
    let yaml = format!("{}  allow: [\"data/*\"]\n", policy("pulls", 100));
    let f = ActionFixture::builder()
        .policy(&yaml)
        .file("data/github_pulls.csv", "number\n1\n2\n3\n")
        .file("data/github", "not a folder\n")
        .start()
        .await;
    f.gh.set_activity(REPO, generate(12, 0, 2));
    let code = "import json, os\nimport pandas as pd\nprint(json.dumps({'mine': len(pd.read_csv('/data/github_pulls.csv')), 'fetched': len(pd.read_csv('/data/github/pulls.csv')), 'data': sorted(os.listdir('/data')), 'folder': sorted(os.listdir('/data/github'))}))\n";
    f.comment(
        "alice",
        &format!(
            "/compute inputs=data/github_pulls.csv,github:pulls?sizes=false count\n{}",
            fenced(code)
        ),
    );
    let run = f.run(COMMENT, "7006").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let got = result_of(&run);
    assert_eq!(got["mine"], 3, "{got}");
    assert_eq!(got["fetched"], 12, "{got}");
    assert_eq!(
        got["data"],
        serde_json::json!(["github", "github_pulls.csv"])
    );
    assert_eq!(got["folder"], serde_json::json!(["pulls.csv"]));
    f.comment(
        "alice",
        &format!(
            "/compute inputs=data/github,github:pulls count\n{}",
            fenced(code)
        ),
    );
    let run = f.run(COMMENT, "7007").await;
    assert_ne!(run.code, 0, "{}", run.log());
    let body = newest(&f);
    // The input `data/github` clashes with the bot's folder /data/github/.
    snapshot_comment("source_folder_clash", &body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_budget_bounds_reviews_and_sizes_and_the_file_says_so() {
    let f = ActionFixture::builder()
        .policy(&policy("pulls, reviews", 40))
        .start()
        .await;
    f.gh.set_activity(REPO, generate(80, 0, 3));
    f.comment(
        "alice",
        &format!(
            "/compute inputs=github:pulls,github:reviews first review\n{}",
            fenced(FIRST_REVIEW)
        ),
    );
    let run = f.run(COMMENT, "7002").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let got = result_of(&run);
    // One list page, then reviews while the budget lasts; no size fits.
    assert_eq!(got["rows"], 80);
    assert_eq!(got["reviewed"], 39, "{got}");
    assert_eq!(got["sized"], 0, "{got}");
    let used =
        f.gh.requests()
            .iter()
            .filter(|s| s.path.contains("/pulls"))
            .count();
    assert_eq!(used, 40, "the budget is the number of requests made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_the_token_cannot_read_stops_with_the_permission_to_add() {
    let f = ActionFixture::builder()
        .policy(&policy("workflow_runs", 100))
        .start()
        .await;
    f.gh.set_activity(REPO, generate(10, 30, 1));
    f.gh.deny_permission("actions");
    f.comment(
        "alice",
        &format!(
            "/compute inputs=github:workflow_runs failure rate\n{}",
            fenced("print(1)\n")
        ),
    );
    let run = f.run(COMMENT, "7003").await;
    assert_ne!(run.code, 0, "{}", run.log());
    let body = &f.bot_comments(7)[0].body;
    // GitHub's 403 and its message, and the `actions: read` permission to add.
    snapshot_comment("source_forbidden", body);
    assert_eq!(run.out("status"), "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_the_policy_does_not_opt_into_is_refused_before_any_request() {
    let f = ActionFixture::builder()
        .policy(&policy("pulls", 100))
        .start()
        .await;
    f.gh.set_activity(REPO, generate(10, 0, 1));
    f.comment(
        "alice",
        &format!(
            "/compute inputs=github:issues?state=closed,github:pull count\n{}",
            fenced("print(1)\n")
        ),
    );
    let run = f.run(COMMENT, "7004").await;
    assert_ne!(run.code, 0, "{}", run.log());
    let body = &f.bot_comments(7)[0].body;
    // What to add to `inputs.github`, and the sources there are.
    snapshot_comment("source_not_opted_into", body);
    assert_eq!(f.gh.count("GET", "/issues?"), 0);
    assert_eq!(f.gh.count("GET", "/pulls"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merged_by_comes_with_the_sizes_and_requested_reviewers_with_the_list() {
    let f = ActionFixture::builder()
        .policy(&policy("pulls", 100))
        .start()
        .await;
    let data = generate(30, 0, 5);
    f.gh.set_activity(REPO, data.clone());
    let code = r#"import json
import pandas as pd
p = pd.read_csv("/data/github/pulls.csv", keep_default_na=False, dtype=str)
print(json.dumps({"merged_by": dict(zip(p["number"], p["merged_by"])), "requested": dict(zip(p["number"], p["requested_reviewers"])), "ready": dict(zip(p["number"], p["ready_for_review"]))}))
"#;
    f.comment(
        "alice",
        &format!(
            "/compute inputs=github:pulls?state=all who merged\n{}",
            fenced(code)
        ),
    );
    let run = f.run(COMMENT, "7010").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let got = result_of(&run);
    assert_eq!(
        got["merged_by"].as_object().unwrap().len(),
        data.pulls.len()
    );
    let (mut merged, mut drafts) = (0, 0);
    for p in &data.pulls {
        let n = p.number.to_string();
        assert_eq!(
            got["merged_by"][&n],
            p.merged_by.clone().unwrap_or_default().as_str(),
            "#{n}"
        );
        assert_eq!(
            got["requested"][&n],
            p.requested_reviewers.join(";"),
            "#{n}"
        );
        assert_eq!(got["ready"][&n], (!p.draft).to_string().as_str(), "#{n}");
        merged += usize::from(p.merged_by.is_some());
        drafts += usize::from(p.draft);
    }
    assert!(merged > 5 && merged < data.pulls.len(), "{merged}");
    assert!(drafts > 0 && drafts < data.pulls.len(), "{drafts} drafts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issues_comments_and_runs_are_read_in_their_real_shapes() {
    let f = ActionFixture::builder()
        .policy(&policy("issues, comments, workflow_runs", 200))
        .start()
        .await;
    let data = generate(150, 250, 11);
    f.gh.set_activity(REPO, data.clone());
    let code = r#"import json
import pandas as pd
i = pd.read_csv("/data/github/issues.csv")
c = pd.read_csv("/data/github/comments.csv")
r = pd.read_csv("/data/github/workflow_runs.csv")
rate = r.groupby("workflow")["conclusion"].apply(lambda s: float((s == "failure").mean())).to_dict()
print(json.dumps({"issues": int(len(i)), "prs": int(i["is_pull_request"].sum()), "comments": int(len(c)), "runs": int(len(r)), "rate": rate}))
"#;
    f.comment("alice", &format!("/compute inputs=github:issues?state=all,github:comments,github:workflow_runs?since=2026-10-01 counts\n{}", fenced(code)));
    let run = f.run(COMMENT, "7005").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let got = result_of(&run);
    assert_eq!(
        got["issues"],
        data.issues.len() + data.pulls.len(),
        "the issues list includes pull requests"
    );
    assert_eq!(got["prs"], data.pulls.len());
    assert_eq!(got["comments"], data.comments.len());
    let since = Utc.with_ymd_and_hms(2026, 10, 1, 0, 0, 0).unwrap();
    let runs: Vec<_> = data.runs.iter().filter(|r| r.created_at >= since).collect();
    assert_eq!(got["runs"], runs.len());
    for w in ["CI", "Lint", "Release"] {
        let of: Vec<_> = runs.iter().filter(|r| r.workflow == w).collect();
        let rate = of.iter().filter(|r| r.conclusion == "failure").count() as f64 / of.len() as f64;
        assert!(
            (got["rate"][w].as_f64().unwrap() - rate).abs() < 1e-12,
            "{w}: {got}"
        );
    }
}

/// The newest comment of the bot.
fn newest(f: &ActionFixture) -> String {
    f.bot_comments(7)
        .into_iter()
        .max_by_key(|c| c.id)
        .expect("the bot answered")
        .body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_reproduces_from_the_kept_snapshot_and_fresh_fetches_again() {
    let f = ActionFixture::builder()
        .policy(&policy("pulls, reviews", 500))
        .start()
        .await;
    f.gh.seed_branch(REPO, "main", &[("README.md", b"# data\n")]);
    f.gh.set_activity(REPO, generate(120, 0, 5));
    f.comment(
        "alice",
        &format!(
            "/compute inputs=github:pulls?state=closed,github:reviews first review\n{}",
            fenced(FIRST_REVIEW)
        ),
    );
    let run = f.run(COMMENT, "7101").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let answer = newest(&f);
    assert!(
        answer.contains("📥 GitHub data") && answer.contains("files branch"),
        "{answer}"
    );
    // The snapshot is committed beside the run's files and hashed in the record.
    let branch =
        f.gh.branch_sha(REPO, "compute-bot-assets")
            .expect("the snapshot was committed");
    let files = f.gh.files_at(REPO, &branch);
    let pulls_csv = files
        .get("runs/7101-1/github/pulls.csv")
        .expect("pulls kept");
    assert!(files.contains_key("runs/7101-1/github/reviews.csv"));
    let report = f.report(&run);
    let recorded = report["record"]["inputs"].as_array().unwrap();
    let pulls = recorded
        .iter()
        .find(|i| i["name"] == "github/pulls.csv")
        .unwrap();
    assert_eq!(
        pulls["sha256"],
        crate::support::action_fixture::sha256(std::str::from_utf8(pulls_csv).unwrap())
    );
    assert_eq!(pulls["path"], "github:pulls?state=closed");
    assert!(
        pulls["snapshot"]
            .as_str()
            .unwrap()
            .starts_with("compute-bot-assets@"),
        "{pulls}"
    );
    // `compute-bot replay` takes the files kept in the run's artifact folder
    // by their place there, and hands them back as /data/github/<source>.csv.
    let kept = f.ws().join("compute-bot-reports/runs/7101-1/github");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_compute-bot"))
        .arg("replay")
        .arg(f.ws().join(run.out("report_path")))
        .arg("--input")
        .arg(kept.join("pulls.csv"))
        .arg("--input")
        .arg(kept.join("reviews.csv"))
        .arg("--workspace")
        .arg(f.ws())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(said.contains("reproduced"), "{said}");

    // The repository moves on; the replay still runs on the recorded data.
    f.gh.set_activity(REPO, generate(140, 0, 6));
    let before = pulls_read(&f);
    f.comment("alice", "/compute replay");
    let run = f.run(COMMENT, "7102").await;
    let verdict = newest(&f);
    assert_eq!(run.code, 0, "{verdict}\n{}", run.log());
    assert!(
        verdict.contains("reproduced") && verdict.contains("snapshot in commit"),
        "{verdict}"
    );
    assert_eq!(pulls_read(&f), before, "nothing fetched again");

    // Asked to, it fetches afresh and says why the result differs.
    f.comment("alice", "/compute replay fresh");
    let run = f.run(COMMENT, "7103").await;
    let verdict = newest(&f);
    assert_ne!(run.code, 0, "{verdict}");
    assert!(
        verdict.contains("differs") && verdict.contains("fetched afresh"),
        "{verdict}"
    );
    assert!(pulls_read(&f) > before);
}

/// Without a files branch the snapshot is only in the run's artifact, under
/// the same path the code read it from: `/compute replay` says which file
/// to download and how to pass it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_without_a_files_branch_names_the_kept_file_to_pass() {
    let yaml = format!(
        "{}output:\n  files:\n    branch: \"\"\n",
        policy("pulls", 100)
    );
    let f = ActionFixture::builder().policy(&yaml).start().await;
    f.gh.set_activity(REPO, generate(20, 0, 4));
    let code = "import json\nimport pandas as pd\nprint(json.dumps({'n': len(pd.read_csv('/data/github/pulls.csv'))}))\n";
    f.comment(
        "alice",
        &format!(
            "/compute inputs=github:pulls?sizes=false count\n{}",
            fenced(code)
        ),
    );
    let run = f.run(COMMENT, "7111").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert!(
        f.ws()
            .join("compute-bot-reports/runs/7111-1/github/pulls.csv")
            .is_file(),
        "kept in the artifact folder as under /data"
    );
    f.comment("alice", "/compute replay");
    let run = f.run(COMMENT, "7112").await;
    let verdict = newest(&f);
    assert_ne!(run.code, 0, "{verdict}");
    assert!(
        verdict.contains("download `runs/&lt;run&gt;-&lt;attempt&gt;/github/pulls.csv`")
            || verdict.contains("download `runs/<run>-<attempt>/github/pulls.csv`"),
        "{verdict}"
    );
    assert!(
        verdict.contains("the path ends in `github/pulls.csv`"),
        "{verdict}"
    );
}

/// Requests to the pull request endpoints (the snapshot's own path,
/// `runs/…/github/pulls.csv` read through the contents API, is not one).
fn pulls_read(f: &ActionFixture) -> usize {
    f.gh.requests()
        .iter()
        .filter(|s| {
            s.method == "GET" && s.path.contains("/pulls") && !s.path.contains("/contents/")
        })
        .count()
}

/// The sample watch `init --github pulls,reviews,workflow_runs` writes, posting to #7.
fn engineering_watch(name: &str) -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/compute/engineering.yml"
    ))
    .unwrap();
    format!(
        "{}\nissue: 7\n",
        text.replace("name: engineering", &format!("name: {name}"))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_weekly_engineering_watch_reads_sources_once_and_keeps_its_sticky_comment() {
    let f = ActionFixture::builder()
        .policy(&policy("pulls, reviews, workflow_runs", 1000))
        .file(
            ".github/compute/engineering.yml",
            engineering_watch("engineering"),
        )
        .file(
            ".github/compute/engineering-copy.yml",
            engineering_watch("engineering-copy"),
        )
        .start()
        .await;
    let data = generate(400, 900, 21);
    f.gh.set_activity(REPO, data.clone());
    f.gh.seed_branch(REPO, "main", &[("README.md", b"# data\n")]);
    f.write_event(&serde_json::json!({"schedule": "0 6 * * 1"}));
    let run = f.run("schedule", "7201").await;
    assert_eq!(run.code, 0, "{}", run.log());
    // Each watch's run record names the snapshot, kept once for both, as a
    // comment's run does; its hash is of the committed file.
    let branch =
        f.gh.branch_sha(REPO, "compute-bot-assets")
            .expect("the snapshot was committed");
    let files = f.gh.files_at(REPO, &branch);
    let report = |name: &str| -> serde_json::Value {
        let path = f
            .ws()
            .join(format!("compute-bot-reports/watch-{name}-7201-1.json"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let (one, copy) = (
        recorded_sources(&report("engineering")),
        recorded_sources(&report("engineering-copy")),
    );
    assert_eq!(one.len(), 3, "{one:?}");
    assert_eq!(one, copy, "one snapshot for both watches");
    for (spec, sha, at, when) in &one {
        let (_, path) = at.split_once(':').expect("a committed snapshot");
        let bytes = files
            .get(path)
            .unwrap_or_else(|| panic!("{spec}: {at} not on the branch"));
        assert_eq!(
            sha,
            &crate::support::action_fixture::sha256(std::str::from_utf8(bytes).unwrap())
        );
        assert!(
            path.starts_with("runs/7201-1/github/") && when.starts_with("20"),
            "{at} {when}"
        );
    }
    let result: serde_json::Value = serde_json::from_str(run.out("result")).unwrap();
    // CI failure rate per workflow over the runs of the last 28 days, computed here.
    let since = Utc::now() - chrono::Duration::days(28);
    let runs: Vec<_> = data.runs.iter().filter(|r| r.created_at >= since).collect();
    assert!(runs.len() > 50, "{}", runs.len());
    for w in ["CI", "Lint", "Release"] {
        let of: Vec<_> = runs.iter().filter(|r| r.workflow == w).collect();
        let rate = of.iter().filter(|r| r.conclusion == "failure").count() as f64 / of.len() as f64;
        let got = result["engineering"]["ci_failure_rate"][w]
            .as_f64()
            .unwrap();
        assert!(
            (got - (rate * 1e4).round() / 1e4).abs() < 1e-9,
            "{w}: {got} vs {rate}"
        );
    }
    assert_eq!(result["engineering"], result["engineering-copy"]);
    // Both watches asked the same sources: fetched once in the run.
    let reviews = f.gh.count("GET", "/reviews");
    let pulls = data.pulls.iter().filter(|p| p.updated_at >= since).count();
    assert_eq!(
        reviews, pulls,
        "one reviews request per pull request, not per watch"
    );
    let sticky = |name: &str| {
        f.bot_comments(7)
            .into_iter()
            .filter(|c| {
                c.body
                    .contains(&format!("<!-- compute-bot:watch={name} -->"))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(sticky("engineering").len(), 1);
    // A week later: the same comment, one more history row.
    let run = f.run("schedule", "7202").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let s = sticky("engineering");
    assert_eq!(s.len(), 1, "{s:?}");
    let rows = s[0].body.lines().filter(|l| l.starts_with("| 20")).count();
    assert_eq!(rows, 2, "{}", s[0].body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_told_the_columns_and_sees_rows_only_at_the_policys_data_level() {
    use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Reply};
    let yaml = format!("{}model:\n  data: schema\n", policy("pulls, reviews", 30));
    let f = ActionFixture::builder().policy(&yaml).start().await;
    let mut data = generate(60, 0, 9);
    data.pulls[0].title = "SECRET-TITLE-7731".into();
    f.gh.set_activity(REPO, data);
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code(
        "Count the rows.",
        "import json\nimport pandas as pd\nprint(json.dumps({'n': len(pd.read_csv('/data/github/pulls.csv'))}))",
    ));
    llm.push(Reply::text("60 pull requests."));
    f.comment(
        "alice",
        "/compute inputs=github:pulls,github:reviews how many pull requests?",
    );
    let run = f
        .run_env(f.env(COMMENT, "7301").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    let (_, user) = &llm.requests()[0].messages()[0];
    for needle in [
        "/data/github/pulls.csv",
        "reviews_fetched",
        "submitted_at",
        "User or Bot",
        "merged_by (login of who merged it",
        "requested_reviewers",
        "ready_for_review (true when it is not a draft",
        "ready_for_review event in each pull request's own events",
        "DISMISSED (an approval or change request a maintainer dismissed: it no longer counts)",
    ] {
        assert!(user.contains(needle), "the prompt lacks {needle}: {user}");
    }
    // The budget (30) cannot cover 60 pull requests' reviews: the prompt says so.
    assert!(user.contains("reviews of 29 of 60 pull requests"), "{user}");
    assert!(
        !user.contains("SECRET-TITLE-7731"),
        "rows reach the model only at model.data: preview"
    );
    let answer = &f.bot_comments(7)[0].body;
    assert!(
        answer.contains("⚠️ `github/reviews.csv`: reviews of 29 of 60"),
        "{answer}"
    );
}

/// The `github:` inputs a report's run record names, by file name:
/// (path, sha256, snapshot, fetched_at).
fn recorded_sources(report: &serde_json::Value) -> Vec<(String, String, String, String)> {
    report["record"]["inputs"]
        .as_array()
        .expect("a run record")
        .iter()
        .filter(|i| i["path"].as_str().is_some_and(|p| p.starts_with("github:")))
        .map(|i| {
            let s = |k: &str| i[k].as_str().unwrap_or_default().to_string();
            (s("path"), s("sha256"), s("snapshot"), s("fetched_at"))
        })
        .collect()
}

/// The first run of a thread on `github:pulls,github:reviews` (120 pull
/// requests), then the repository moves on (140 other ones): what a later
/// run in the thread computes on tells which data it read.
async fn first_run_then_new_activity(
    f: &ActionFixture,
    run_id: &str,
    code: &str,
) -> (usize, serde_json::Value) {
    f.gh.seed_branch(REPO, "main", &[("README.md", b"# data\n")]);
    f.gh.set_activity(REPO, generate(120, 0, 5));
    f.comment(
        "alice",
        &format!(
            "/compute inputs=github:pulls,github:reviews first review\n{}",
            fenced(code)
        ),
    );
    let run = f.run(COMMENT, run_id).await;
    assert_ne!(run.out("status"), "failed", "{}", run.log());
    f.gh.set_activity(REPO, generate(140, 0, 6));
    (pulls_read(f), f.report(&run))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_computes_on_the_first_runs_snapshot_not_a_second_fetch() {
    let f = ActionFixture::builder()
        .policy(&policy("pulls, reviews", 500))
        .start()
        .await;
    let (before, first) = first_run_then_new_activity(&f, "7401", FIRST_REVIEW).await;
    let first_result = first["result"].clone();
    assert_eq!(first_result["rows"], 120);
    // A follow-up naming no inputs takes the first run's sources.
    f.comment(
        "alice",
        &format!(
            "/compute the same, on the same data\n{}",
            fenced(FIRST_REVIEW)
        ),
    );
    let run = f.run(COMMENT, "7402").await;
    assert_eq!(run.code, 0, "{}", run.log());
    // The first data (120 pull requests), not the repository's new 140.
    assert_eq!(result_of(&run), first_result);
    assert_eq!(
        pulls_read(&f),
        before,
        "no list, review or size request for the follow-up"
    );
    let reads: Vec<String> = f.gh.requests()[..]
        .iter()
        .map(|s| s.path.clone())
        .filter(|p| p.contains("/contents/runs/7401-1/github/"))
        .collect();
    assert_eq!(reads.len(), 2, "each snapshot read back once: {reads:?}");
    let answer = newest(&f);
    assert!(
        answer.contains("the GitHub data of run 7401, fetched at")
            && answer.contains("not fetched again"),
        "{answer}"
    );
    // The record names the first run's snapshot and fetch time.
    let second = f.report(&run);
    let (a, b) = (recorded_sources(&first), recorded_sources(&second));
    assert_eq!(a.len(), 2, "{a:?}");
    assert_eq!(a, b);
    assert!(
        a.iter()
            .all(|(_, _, at, when)| at.contains(":runs/7401-1/github/") && when.starts_with("20")),
        "{a:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_up_without_a_snapshot_fetches_afresh_and_says_so() {
    let f = ActionFixture::builder()
        .policy(&policy("pulls, reviews", 500))
        .start()
        .await;
    // A token that cannot write: the snapshot is only in the run's artifact.
    f.gh.set_token_access(crate::support::action_fixture::TOKEN, "read", "read");
    let (before, _) = first_run_then_new_activity(&f, "7411", FIRST_REVIEW).await;
    f.comment(
        "alice",
        &format!("/compute again\n{}", fenced(FIRST_REVIEW)),
    );
    let run = f.run(COMMENT, "7412").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(result_of(&run)["rows"], 140, "the current data");
    assert!(pulls_read(&f) > before);
    let answer = newest(&f);
    assert!(
        answer.contains("fetched afresh") && answer.contains("no snapshot on the files branch"),
        "{answer}"
    );
}

/// The escalation policy with the pull request sources opted in.
fn escalating_sources_policy() -> String {
    crate::support::action_fixture::escalate_policy().replace(
        "\ninputs: {}\n",
        "\ninputs:\n  github: [pulls, reviews]\n  github_max_requests: 500\n",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_runs_on_the_data_shown_not_a_second_fetch() {
    let f = ActionFixture::builder()
        .policy(&escalating_sources_policy())
        .start()
        .await;
    let code = format!("import hashlib\n{FIRST_REVIEW}");
    let (before, _) = first_run_then_new_activity(&f, "7501", &code).await;
    assert!(
        newest(&f).contains("`/compute approve`"),
        "the code waits for an approval: {}",
        newest(&f)
    );
    f.comment("maint", "/compute approve");
    let run = f.run(COMMENT, "7502").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok");
    assert_eq!(
        result_of(&run)["rows"],
        120,
        "the data the approver was shown"
    );
    assert_eq!(pulls_read(&f), before, "nothing fetched again");
    let answer = newest(&f);
    assert!(
        answer.contains("the GitHub data of run 7501") && answer.contains("not fetched again"),
        "{answer}"
    );
    let recorded = recorded_sources(&f.report(&run));
    assert!(
        recorded
            .iter()
            .all(|(_, _, at, _)| at.contains(":runs/7501-1/github/")),
        "{recorded:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_without_a_snapshot_stops_when_the_data_changed() {
    let f = ActionFixture::builder()
        .policy(&escalating_sources_policy())
        .start()
        .await;
    f.gh.set_token_access(crate::support::action_fixture::TOKEN, "read", "read");
    let code = format!("import hashlib\n{FIRST_REVIEW}");
    first_run_then_new_activity(&f, "7511", &code).await;
    f.comment("maint", "/compute approve");
    let run = f.run(COMMENT, "7512").await;
    assert_eq!(run.out("status"), "failed", "{}", run.log());
    let answer = newest(&f);
    assert!(
        answer.contains("cannot run on the same data")
            && answer.contains("`github:pulls` changed since the code was shown")
            && answer.contains("Ask again with a new `/compute` comment"),
        "{answer}"
    );
}

/// The requests to the activity endpoints (lists, single pull requests,
/// reviews) made since the `from`-th request.
fn activity_since(f: &ActionFixture, from: usize) -> Vec<crate::support::github_standin::Seen> {
    f.gh.requests()
        .into_iter()
        .skip(from)
        .filter(|s| {
            s.method == "GET"
                && !s.path.contains("/contents/")
                && ["/pulls", "/issues?", "/issues/comments?", "/actions/runs"]
                    .iter()
                    .any(|p| s.path.contains(p))
        })
        .collect()
}

/// `replay fresh` of data that have not changed asks GitHub again with the
/// `ETag`s kept beside the snapshot: every request answers 304 Not
/// Modified, no primary rate limit is spent on them, and the replay
/// computes on the snapshot. Once the data change, one conditional request
/// is answered in full and everything is fetched afresh.
async fn replay_fresh_asks_conditionally(pulls: u64, source: &str) -> (usize, usize) {
    let f = ActionFixture::builder()
        .policy(&policy(
            "pulls, reviews, issues, comments, workflow_runs",
            1000,
        ))
        .start()
        .await;
    f.gh.seed_branch(REPO, "main", &[("README.md", b"# data\n")]);
    f.gh.set_activity(REPO, generate(pulls, 150, 5));
    let code = "import json\nimport pandas as pd\np = pd.read_csv('/data/github/pulls.csv')\nprint(json.dumps({'n': len(p), 'sized': int(p['additions'].notna().sum())}))\n";
    f.comment(
        "alice",
        &format!("/compute inputs={source} count\n{}", fenced(code)),
    );
    let start = f.gh.requests().len();
    let run = f.run(COMMENT, "7301").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let first = activity_since(&f, start);
    let first_units = first.iter().filter(|s| s.status != 304).count();
    let branch = f.gh.branch_sha(REPO, "compute-bot-assets").unwrap();
    assert!(
        f.gh.files_at(REPO, &branch)
            .contains_key("runs/7301-1/github/pulls.etags.json"),
        "the ETags are kept beside the snapshot"
    );

    f.comment("alice", "/compute replay fresh");
    let (start, rate) = (f.gh.requests().len(), f.gh.rate_remaining());
    let run = f.run(COMMENT, "7302").await;
    let verdict = newest(&f);
    assert_eq!(run.code, 0, "{verdict}\n{}", run.log());
    assert!(
        verdict.contains("reproduced") && verdict.contains("unchanged since run 7301"),
        "{verdict}"
    );
    let again = activity_since(&f, start);
    assert_eq!(again.len(), first.len(), "each request asked again once");
    assert!(
        again
            .iter()
            .all(|s| s.status == 304 && s.if_none_match.is_some()),
        "{again:?}"
    );
    let spent = f.gh.requests()[start..]
        .iter()
        .filter(|s| s.status != 304)
        .count();
    assert_eq!(
        (rate - f.gh.rate_remaining()) as usize,
        spent,
        "the 304s spent no rate limit; only the run's other requests did"
    );

    // The repository moves on: the first conditional request is answered in
    // full, and the data are fetched afresh.
    f.gh.set_activity(REPO, generate(pulls + 20, 150, 6));
    f.comment("alice", "/compute replay fresh");
    let start = f.gh.requests().len();
    let run = f.run(COMMENT, "7303").await;
    let verdict = newest(&f);
    assert_ne!(run.code, 0, "{verdict}");
    assert!(
        verdict.contains("differs") && verdict.contains("changed since the earlier run"),
        "{verdict}"
    );
    let changed = activity_since(&f, start);
    assert_eq!(changed[0].status, 200, "{changed:?}");
    assert!(changed.iter().skip(1).all(|s| s.if_none_match.is_none()));
    (first.len(), first_units)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_fresh_of_unchanged_data_gets_304s_and_spends_no_rate_limit() {
    let (requests, units) =
        replay_fresh_asks_conditionally(60, "github:pulls?state=closed,github:reviews").await;
    assert!(requests > 60 && units == requests, "{requests} {units}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_fresh_asks_every_list_source_conditionally() {
    let (requests, units) = replay_fresh_asks_conditionally(
        40,
        "github:pulls?sizes=false,github:issues?state=all,github:comments,github:workflow_runs",
    )
    .await;
    // A page of pulls, issues (pull requests included), comments and runs each.
    assert!(requests >= 4 && units == requests, "{requests} {units}");
}

/// 300 pull requests, with and without their sizes: what an unchanged
/// `replay fresh` asks and spends (before: the first run's requests, each
/// one rate limit unit; now: as many conditional requests, all 304).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_fresh_of_300_unchanged_pull_requests_costs_no_rate_limit() {
    for source in [
        "github:pulls?state=all&sizes=false",
        "github:pulls?state=all",
    ] {
        let (requests, units) = replay_fresh_asks_conditionally(300, source).await;
        eprintln!(
            "{source}: the first fetch {requests} requests, {units} rate limit units; an unchanged replay fresh {requests} conditional requests, 0 units"
        );
        assert_eq!(units, requests);
    }
}

/// Counts the rows of `/data/github/issues.csv`.
const COUNT_ISSUES: &str = "import json\nimport pandas as pd\nprint(json.dumps({'rows': len(pd.read_csv('/data/github/issues.csv'))}))\n";

/// Requests to the issues list (not to one issue's comments, not the
/// bot's own reactions and comments).
fn issue_lists(f: &ActionFixture) -> Vec<String> {
    f.gh.requests()
        .into_iter()
        .filter(|s| s.method == "GET" && s.path.contains("/issues?"))
        .map(|s| s.path)
        .collect()
}

/// Pagination follows `Link: rel="next"` only to the same API host, the
/// same repository and the same endpoint: a link to another repository or
/// another host stops the source there, with a note in the answer, and no
/// request is sent to it (with the job's token or at all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_next_page_link_elsewhere_is_not_followed_and_the_answer_says_so() {
    let f = ActionFixture::builder()
        .policy(&policy("issues", 100))
        .start()
        .await;
    f.gh.set_activity(REPO, generate(260, 0, 5));
    let ask = |f: &ActionFixture| {
        f.comment(
            "alice",
            &format!(
                "/compute inputs=github:issues?state=all count\n{}",
                fenced(COUNT_ISSUES)
            ),
        )
    };
    // Followed through every page of this repository's list.
    ask(&f);
    let run = f.run(COMMENT, "7301").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let all = result_of(&run)["rows"].as_u64().unwrap();
    assert!(all > 200, "{all}");
    assert_eq!(
        issue_lists(&f).len() as u64,
        all.div_ceil(100),
        "{:?}",
        issue_lists(&f)
    );
    let base = f.gh.uri();
    let other_host = base.replace("127.0.0.1", "localhost");
    for (n, (from, to)) in [
        ("/repos/octo-org/data/", "/repos/evil-org/loot/"),
        ("/repos/octo-org/data/issues", "/repos/octo-org/data/pulls"),
        (base.as_str(), other_host.as_str()),
    ]
    .into_iter()
    .enumerate()
    {
        f.gh.rewrite_links(from, to);
        let before = issue_lists(&f).len();
        let seen_before = f.gh.requests().len();
        ask(&f);
        let run = f.run(COMMENT, &format!("730{}", n + 2)).await;
        assert_eq!(run.code, 0, "{to}: {}", run.log());
        assert_eq!(result_of(&run)["rows"], 100, "{to}: the first page only");
        assert_eq!(issue_lists(&f).len(), before + 1, "{to}: one list request");
        let after = f.gh.requests();
        assert!(
            after[seen_before..]
                .iter()
                .all(|s| !s.path.contains("evil-org") && !s.path.contains("/pulls")),
            "{to}: {:?}",
            &after[seen_before..]
        );
        let answer = f.bot_comments(7).pop().unwrap();
        // Not a snapshot: one check over every rewritten link.
        assert!(
            answer.body.contains("next-page link was not followed")
                && answer.body.contains("no request was sent there"),
            "{to}: {}",
            answer.body
        );
    }
}

/// A watch file asking for one `github:` source (`spec`).
fn source_watch(name: &str, spec: &str) -> String {
    format!(
        "name: {name}\ncode: |\n  import json\n  print(json.dumps({{\"ok\": 1}}))\ninputs:\n  - \"{spec}\"\n"
    )
}

/// `inputs.github_max_requests` is one budget for the whole run: four
/// watches asking four different sources together make at most that many
/// requests (each with a budget of its own made three times as many), and
/// the watches left without requests say which budget ran out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_budget_bounds_every_watch_of_the_run() {
    let f = ActionFixture::builder()
        .policy(&policy("pulls, issues, comments, workflow_runs", 4))
        .file(
            ".github/compute/a.yml",
            source_watch("a", "github:issues?state=all"),
        )
        .file(
            ".github/compute/b.yml",
            source_watch("b", "github:comments"),
        )
        .file(
            ".github/compute/c.yml",
            source_watch("c", "github:workflow_runs"),
        )
        .file(
            ".github/compute/d.yml",
            source_watch("d", "github:pulls?state=all&sizes=false"),
        )
        .start()
        .await;
    f.gh.set_activity(REPO, generate(260, 260, 8));
    f.gh.seed_branch(REPO, "main", &[("README.md", b"# data\n")]);
    f.write_event(&serde_json::json!({"schedule": "0 6 * * 1"}));
    let run = f.run("schedule", "7401").await;
    let lists =
        f.gh.requests()
            .into_iter()
            .filter(|s| {
                s.method == "GET"
                    && ["/issues", "/actions/runs", "/pulls"]
                        .iter()
                        .any(|p| s.path.contains(p))
                    && !s.path.contains("/contents/")
            })
            .count();
    assert_eq!(lists, 4, "one budget of 4 for the run\n{}", run.log());
    let said = format!("{}{}", run.stdout, run.summary);
    assert!(
        said.contains("one budget for every watch and source of the run"),
        "{}",
        run.log()
    );
}

/// `replay fresh` asks again only the kept URLs that belong to the recorded
/// source (a kept `ETag` of another repository's or host's URL asks nothing
/// and the data are fetched afresh, saying why), and its conditional
/// requests take from the run's one request budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_fresh_asks_only_the_sources_own_urls_within_the_runs_budget() {
    let f = ActionFixture::builder()
        .policy(&policy("pulls", 10))
        .start()
        .await;
    f.gh.seed_branch(REPO, "main", &[("README.md", b"# data\n")]);
    f.gh.set_activity(REPO, generate(250, 0, 5));
    let code = "import json\nimport pandas as pd\nprint(json.dumps({'n': len(pd.read_csv('/data/github/pulls.csv'))}))\n";
    f.comment(
        "alice",
        &format!(
            "/compute inputs=github:pulls?state=all&sizes=false count\n{}",
            fenced(code)
        ),
    );
    let run = f.run(COMMENT, "7501").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let side = "runs/7501-1/github/pulls.etags.json";
    let branch = f.gh.branch_sha(REPO, "compute-bot-assets").unwrap();
    let kept: Vec<(String, String)> =
        serde_json::from_slice(&f.gh.files_at(REPO, &branch)[side]).unwrap();
    assert_eq!(kept.len(), 3, "three pages: {kept:?}");
    let pulls_since = |start: usize| {
        f.gh.requests()[start..]
            .iter()
            .filter(|s| s.path.contains("/pulls") && !s.path.contains("/contents/"))
            .cloned()
            .collect::<Vec<_>>()
    };

    // A kept ETag of another repository's list and one of another host.
    let other_host = format!("{}/repos/octo-org/data/pulls?page=9", f.gh.uri())
        .replace("127.0.0.1", "localhost");
    for foreign in [
        "/repos/evil-org/loot/pulls?state=all".to_string(),
        other_host,
    ] {
        let mut tampered = kept.clone();
        tampered.insert(1, (foreign.clone(), "\"feed\"".into()));
        f.gh.tamper_file(REPO, side, Some(&serde_json::to_vec(&tampered).unwrap()));
        f.comment("alice", "/compute replay fresh");
        let start = f.gh.requests().len();
        let run = f.run(COMMENT, "7502").await;
        let verdict = newest(&f);
        assert_eq!(run.code, 0, "{verdict}\n{}", run.log());
        assert!(
            verdict.contains("not one of its requests") && verdict.contains("fetched afresh"),
            "{verdict}"
        );
        let asked = pulls_since(start);
        assert!(
            asked
                .iter()
                .all(|s| s.if_none_match.is_none() && !s.path.contains("evil-org")),
            "{foreign}: nothing conditional, nothing elsewhere: {asked:?}"
        );
    }
    f.gh.tamper_file(REPO, side, None);

    // With a budget of two, two of the three conditional requests are asked
    // and the replay stops there: the budget is the run's.
    f.policy(&policy("pulls", 2));
    f.comment("alice", "/compute replay fresh");
    let start = f.gh.requests().len();
    let run = f.run(COMMENT, "7503").await;
    let verdict = newest(&f);
    let asked = pulls_since(start);
    assert_eq!(asked.len(), 2, "{asked:?}\n{verdict}");
    assert!(asked.iter().all(|s| s.if_none_match.is_some()), "{asked:?}");
    assert!(
        verdict.contains("github_max_requests"),
        "{verdict}\n{}",
        run.log()
    );
}
