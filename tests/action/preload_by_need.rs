//! Preload by need through the Action, with the real sandbox: exact code
//! (known before its container is prepared) preloads exactly the heavy
//! modules it imports, so code that imports nothing heavy never waits for a
//! preload; a goal (the code still unknown while the model writes) preloads
//! what its words call for, then the policy's fixed list. Either preload
//! stops at the next module once the code has arrived, so the audit's
//! preloaded and skipped modules together are the list. The container
//! prepared ahead for exact code is removed when the request stops before
//! it runs.

use crate::support::ActionRun as Run;
use crate::support::action_fixture::{ActionFixture, COMMENT, fenced, snapshot_sandbox_comment};
use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Reply};
use serde_json::{Value, json};

/// The first attempt's outcome in the run's report.
fn outcome(f: &ActionFixture, run: &Run) -> Value {
    let report = f.report(run);
    assert_eq!(report["status"], "ok", "{}", run.log());
    report["attempts"][0]["outcome"].clone()
}

/// What the sandbox preloaded, as its audit reports it.
fn preloaded(outcome: &Value) -> Vec<String> {
    outcome["audit"]["preloaded"]
        .as_array()
        .map(|a| a.iter().map(|m| m.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// The preload the sandbox was given, as its audit reports it: the
/// modules preloaded and those skipped because the code had arrived and
/// does not import them, sorted (which of them loaded depends on when the
/// code came).
fn preload_list(outcome: &Value) -> Vec<String> {
    let skipped: Vec<String> = outcome["audit"]["preload_skipped"]
        .as_array()
        .map(|a| a.iter().map(|m| m.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    let mut all: Vec<String> = preloaded(outcome).into_iter().chain(skipped).collect();
    all.sort();
    all
}

fn sorted(v: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = v.iter().map(|m| m.to_string()).collect();
    v.sort();
    v
}

/// The outcome's notes about waiting for a preload.
fn waiting_notes(outcome: &Value) -> Vec<String> {
    outcome["notes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str())
        .filter(|n| n.contains("waited") || n.contains("preload"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_code_importing_only_json_gets_no_preload_and_never_waits() {
    let f = ActionFixture::new().await;
    let code = "import json\nprint(json.dumps({\"answer\": 6 * 7}))\n";
    f.comment("alice", &format!("/compute the answer\n{}", fenced(code)));
    let run = f.run(COMMENT, "9701").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"answer": 42})
    );
    let o = outcome(&f, &run);
    assert_eq!(preloaded(&o), Vec::<String>::new(), "{o}");
    assert_eq!(waiting_notes(&o), Vec::<String>::new(), "{o}");
    let body = &f.bot_comments(7)[0].body;
    assert!(!body.contains("preloaded before the code"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_code_importing_pandas_gets_pandas_preloaded() {
    let f = ActionFixture::new().await;
    let code = "import json\nimport pandas as pd\ndf = pd.read_csv(\"/data/sales.csv\")\nprint(json.dumps({\"total\": int(df[\"amount\"].sum())}))\n";
    f.comment(
        "alice",
        &format!("/compute inputs=data/sales.csv total\n{}", fenced(code)),
    );
    let run = f.run(COMMENT, "9702").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"total": 42})
    );
    let o = outcome(&f, &run);
    // The code imports pandas: it loads before the code runs, however early
    // the code came.
    assert_eq!(preloaded(&o), vec!["pandas"], "{o}");
    // Waiting for its own import is no wait for a preload it does not use.
    assert_eq!(waiting_notes(&o), Vec::<String>::new(), "{o}");
    let body = &f.bot_comments(7)[0].body;
    // Not a snapshot: the sandbox settings name the preload rows (`[preload]`,
    // they race the code elsewhere); here it is the fact under test.
    assert!(
        body.contains(
            "| Preloaded before the code arrived | `pandas` | reported by the code's interpreter |"
        ),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_codes_from_imports_preload_the_submodules_they_name() {
    // `from scipy import stats` imports the package `scipy` (a lazy one
    // that loads in milliseconds) and then its heavy submodule: the
    // preload loads `scipy.stats` itself, as it does `matplotlib.pyplot`;
    // `pandas.DataFrame` is no module, so only pandas is loaded for it.
    let f = ActionFixture::new().await;
    let code = "import json\nfrom pandas import DataFrame\nfrom scipy import stats\n\
                from matplotlib import pyplot as plt\n\
                df = DataFrame({\"v\": [1.0, 2.0, 3.0, 4.5]})\n\
                print(json.dumps({\"p\": round(float(stats.ttest_1samp(df.v, 0).pvalue), 4), \"backend\": plt.get_backend()}))\n";
    f.comment("alice", &format!("/compute a t-test\n{}", fenced(code)));
    let run = f.run(COMMENT, "9705").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"p": 0.039, "backend": "Agg"})
    );
    let o = outcome(&f, &run);
    assert_eq!(
        preloaded(&o),
        vec![
            "pandas",
            "scipy",
            "scipy.stats",
            "matplotlib",
            "matplotlib.pyplot"
        ],
        "{o}"
    );
    assert_eq!(waiting_notes(&o), Vec::<String>::new(), "{o}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_without_words_for_the_analysis_stack_preloads_the_fixed_list() {
    let f = ActionFixture::new().await;
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code(
        "Print the answer.",
        "import json\nprint(json.dumps({'answer': 42}))",
    ));
    llm.push(Reply::text("The answer is 42."));
    f.comment("alice", "/compute what is six times seven?");
    let run = f
        .run_env(f.env(COMMENT, "9703").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    let o = outcome(&f, &run);
    assert_eq!(
        preload_list(&o),
        sorted(&["pandas", "numpy", "matplotlib.pyplot"]),
        "{o}"
    );
    // A wait, if the model answered before the preload was done, names
    // the modules this code does not use.
    for n in waiting_notes(&o) {
        assert!(n.contains("it does not import: "), "{n}");
    }
}

/// A goal asking for a classifier: while the model writes, the container
/// preloads scikit-learn's ensembles and splits first, then the policy's
/// fixed list (which the old preload was limited to).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_asking_for_a_classifier_preloads_scikit_learn_first() {
    let f = ActionFixture::new().await;
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code(
        "Fit and score.",
        "import json\nimport numpy as np\nfrom sklearn.ensemble import RandomForestClassifier\n\
         X = np.arange(40).reshape(20, 2)\ny = (X[:, 0] > 20).astype(int)\n\
         m = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)\n\
         print(json.dumps({'accuracy': float(m.score(X, y))}))",
    ));
    llm.push(Reply::text("It fits."));
    f.comment(
        "alice",
        "/compute train a random forest classifier and report its accuracy",
    );
    let run = f
        .run_env(f.env(COMMENT, "9705").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"accuracy": 1.0})
    );
    let o = outcome(&f, &run);
    assert_eq!(
        preload_list(&o),
        sorted(&[
            "sklearn.ensemble",
            "sklearn.model_selection",
            "sklearn.metrics",
            "pandas",
            "numpy",
            "matplotlib.pyplot"
        ]),
        "{o}"
    );
    // scikit-learn first; what the code imports is loaded before it runs
    // (however early it came), what it does not may be skipped.
    let pre = preloaded(&o);
    assert_eq!(pre[0], "sklearn.ensemble", "{o}");
    assert!(pre.contains(&"numpy".to_string()), "{o}");
}

/// A policy that does not allow scikit-learn gets no guess of it: the
/// words call for it, the static check would refuse it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_never_preloads_what_the_policy_does_not_allow() {
    let f = ActionFixture::builder()
        .policy("version: 1\ncode:\n  allow_imports: [json, pandas.*, numpy.*, matplotlib.*, scipy.*]\n")
        .start()
        .await;
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code(
        "Print the answer.",
        "import json\nprint(json.dumps({'answer': 42}))",
    ));
    llm.push(Reply::text("The answer is 42."));
    f.comment(
        "alice",
        "/compute a random forest classifier, and the p-value of a t-test",
    );
    let run = f
        .run_env(f.env(COMMENT, "9706").model(&llm, CANARY_KEY))
        .await;
    assert_eq!(run.code, 0, "{}", run.log());
    let o = outcome(&f, &run);
    assert_eq!(
        preload_list(&o),
        sorted(&["scipy.stats", "pandas", "numpy", "matplotlib.pyplot"]),
        "{o}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_container_prepared_ahead_is_removed_when_the_request_stops_first() {
    let f = ActionFixture::new().await;
    // GitHub's round trips, so the container is under way when the request stops.
    f.gh.set_latency(std::time::Duration::from_millis(300));
    let code = "import json\nimport pandas as pd\nprint(json.dumps({\"rows\": len(pd.read_csv(\"/data/nope.csv\"))}))\n";
    f.comment(
        "alice",
        &format!("/compute inputs=data/nope.csv rows\n{}", fenced(code)),
    );
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 1;
    let run = f.run(COMMENT, "9704").await;
    assert_eq!(
        (run.code, run.out("status")),
        (1, "failed"),
        "{}",
        run.log()
    );
    let body = &f.bot_comments(7)[0].body;
    // `data/nope.csv` does not exist; nothing was run.
    snapshot_sandbox_comment("preload_input_missing", body);
    // A container may have been prepared ahead for the exact code (its
    // interpreter importing pandas while the bot talked to GitHub; a stop
    // this quick may close the session before the engine is asked) ...
    let label = format!("label={}={}", compute_bot::sandbox::LABEL_PID, run.pid);
    let until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1;
    let events = std::process::Command::new("docker")
        .args([
            "events",
            "--since",
            &since.to_string(),
            "--until",
            &until.to_string(),
        ])
        .args([
            "--filter",
            &label,
            "--filter",
            "event=create",
            "--format",
            "{{.ID}}",
        ])
        .output()
        .unwrap();
    assert!(events.status.success());
    let created = String::from_utf8_lossy(&events.stdout).lines().count();
    assert!(created <= 1, "{created} containers for one request");
    // ... and whether or not, no container of that bot process is left.
    let out = std::process::Command::new("docker")
        .args(["ps", "-a", "-q", "--filter", &label])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "",
        "left behind"
    );
}

/// When the engine created this run's containers (Unix nanoseconds).
fn container_creations(run: &Run) -> Vec<i128> {
    crate::support::container_creation_times(run.pid, run.started)
}

/// The wall-clock time (Unix nanoseconds) of an `Instant` in the past.
fn wall_nanos(at: std::time::Instant) -> i128 {
    let now = chrono::Utc::now().timestamp_nanos_opt().unwrap() as i128;
    now - at.elapsed().as_nanos() as i128
}

/// Exact code's container starts while GitHub says who asked: with every
/// GitHub answer taking a second, the engine created it before the answer
/// to the permission request came back (it used to start only after that
/// answer and the search for an earlier answer, two seconds later).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_code_starts_its_container_while_the_permission_is_checked() {
    let f = ActionFixture::new().await;
    let latency = std::time::Duration::from_millis(1000);
    f.gh.set_latency(latency);
    let code = "import json\nimport pandas as pd\nprint(json.dumps({\"n\": len(pd.DataFrame({\"a\": [1, 2]}))}))\n";
    f.comment("alice", &format!("/compute count\n{}", fenced(code)));
    let run = f.run(COMMENT, "9711").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(
        serde_json::from_str::<Value>(run.out("result")).unwrap(),
        json!({"n": 2})
    );
    let asked =
        f.gh.requests()
            .into_iter()
            .find(|s| s.path.contains("/collaborators/alice/permission"))
            .expect("the permission was asked");
    let answered = wall_nanos(asked.at) + latency.as_nanos() as i128;
    let created = container_creations(&run);
    assert_eq!(created.len(), 1, "one container, the one prepared ahead");
    assert!(
        created[0] < answered,
        "the container was created {} ms after the permission was answered",
        (created[0] - answered) / 1_000_000
    );
}

/// A refused request's container, started while the permission was
/// checked, never gets the code and is removed: nothing of the run is left
/// on the engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_requests_early_container_is_removed_unused() {
    let f = ActionFixture::new().await;
    let code = "import json\nprint(json.dumps({\"ran\": True}))\n";
    f.comment("rita", &format!("/compute do it\n{}", fenced(code)));
    let run = f.run(COMMENT, "9712").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "refused");
    assert!(run.out("report_path").is_empty(), "nothing ran, no report");
    let left = std::process::Command::new("docker")
        .args(["ps", "-aq", "--filter"])
        .arg(format!("label=org.compute-bot.pid={}", run.pid))
        .output()
        .expect("docker ps");
    assert_eq!(
        String::from_utf8_lossy(&left.stdout).trim(),
        "",
        "left behind"
    );
    // It was prepared while GitHub answered, then dropped with the refusal.
    assert_eq!(container_creations(&run).len(), 1, "{}", run.log());
}
