//! Loopback stand-ins shared by the integration tests: the GitHub API and
//! the model providers, speaking their real wire formats and keeping state.
//! Also the fixture of the action tests (`action_fixture`) and the
//! in-memory executor of the loop tests (`scripted_executor`).
#![allow(dead_code)]

pub mod action_fixture;
pub mod engine_proxy;
pub mod git_store;
pub mod github_activity;
pub mod github_git;
pub mod github_pulls;
pub mod github_standin;
pub mod llm_standin;
pub mod notebook;
pub mod registry;
pub mod scripted_executor;

use std::collections::BTreeMap;
use std::path::Path;

/// The environment a GitHub runner gives the action for one run (the
/// binary runs with `env_clear`), plus the host's `PATH`, `DOCKER_HOST` and
/// `HOME` so it can reach the engine.
pub fn action_env(
    event: &str,
    event_path: &Path,
    repo: &str,
    api_url: &str,
    run_id: &str,
    workspace: &Path,
    token: &str,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = [
        ("GITHUB_EVENT_NAME", event.to_string()),
        ("GITHUB_EVENT_PATH", event_path.display().to_string()),
        ("GITHUB_REPOSITORY", repo.to_string()),
        ("GITHUB_API_URL", api_url.to_string()),
        ("GITHUB_SERVER_URL", "https://github.example".to_string()),
        ("GITHUB_RUN_ID", run_id.to_string()),
        ("GITHUB_RUN_ATTEMPT", "1".to_string()),
        ("GITHUB_WORKSPACE", workspace.display().to_string()),
        ("INPUT_GITHUB_TOKEN", token.to_string()),
        ("INPUT_COMMAND", "/compute".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for k in ["PATH", "DOCKER_HOST", "HOME"] {
        if let Ok(v) = std::env::var(k) {
            env.insert(k.to_string(), v);
        }
    }
    env
}

/// What one `compute-bot action` run left, as a runner sees it.
pub struct ActionRun {
    /// The exit status (-1 when killed by a signal).
    pub code: i32,
    /// The log's stdout (workflow commands, annotations).
    pub stdout: String,
    /// The log's stderr.
    pub stderr: String,
    /// The `GITHUB_OUTPUT` file as written.
    pub outputs_file: String,
    /// Its outputs by name (`name=value` lines and `name<<DELIM` blocks).
    pub outputs: BTreeMap<String, String>,
    /// The `GITHUB_STEP_SUMMARY` file.
    pub summary: String,
    /// The bot's process id (its containers carry it as a label).
    pub pid: u32,
    /// When it started (Unix seconds).
    pub started: i64,
}

/// How many containers process `pid` created since `since` (Unix seconds),
/// read back from the engine's event log by the pid label every container
/// gets (the containers themselves are gone by then).
pub fn containers_created(pid: u32, since: i64) -> usize {
    container_creation_times(pid, since).len()
}

/// When the engine created each container of process `pid` since `since`
/// (Unix seconds), in Unix nanoseconds, from its event log.
pub fn container_creation_times(pid: u32, since: i64) -> Vec<i128> {
    let until = chrono::Utc::now().timestamp() + 1;
    let events = std::process::Command::new("docker")
        .args(["events", "--since", &(since - 1).to_string()])
        .args(["--until", &until.to_string()])
        .args(["--filter", "type=container", "--filter", "event=create"])
        .args(["--filter", &format!("label=org.compute-bot.pid={pid}")])
        .args(["--format", "{{.TimeNano}}"])
        .output()
        .expect("docker events");
    assert!(events.status.success(), "docker events: {events:?}");
    String::from_utf8_lossy(&events.stdout)
        .lines()
        .map(|l| l.trim().parse().expect("a TimeNano"))
        .collect()
}

impl ActionRun {
    /// How many containers this run created (see [`containers_created`]).
    pub fn containers_created(&self) -> usize {
        containers_created(self.pid, self.started)
    }

    /// One output; panics with the log when the run did not set it.
    pub fn out(&self, name: &str) -> &str {
        self.outputs
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no output {name} in {:?}\n{}", self.outputs, self.log()))
    }

    /// Asserts the exit code and the `status` output, with the log.
    #[track_caller]
    pub fn assert_ended(&self, code: i32, status: &str) {
        assert_eq!(
            (self.code, self.out("status")),
            (code, status),
            "{}",
            self.log()
        );
    }

    /// Exit status, stdout, stderr and outputs, for assertion messages.
    pub fn log(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}\n--- stderr\n{}\n--- outputs\n{}",
            self.code, self.stdout, self.stderr, self.outputs_file
        )
    }
}

/// Parses a `GITHUB_OUTPUT` file (`name=value` and `name<<DELIM` blocks).
pub fn parse_outputs(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delim)) = line.split_once("<<") {
            let mut v = Vec::new();
            for l in lines.by_ref() {
                if l == delim {
                    break;
                }
                v.push(l);
            }
            out.insert(name.to_string(), v.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            out.insert(name.to_string(), value.to_string());
        }
    }
    out
}

/// Runs `compute-bot action` as a runner does: with exactly `env` (see
/// [`action_env`]), fresh `GITHUB_OUTPUT` and `GITHUB_STEP_SUMMARY` files
/// in `dir`, in `workspace`.
pub async fn run_action(env: &BTreeMap<String, String>, dir: &Path, workspace: &Path) -> ActionRun {
    run_action_bin(
        Path::new(env!("CARGO_BIN_EXE_compute-bot")),
        env,
        dir,
        workspace,
    )
    .await
}

/// [`run_action`] with another build of the binary (a benchmark's
/// baseline).
pub async fn run_action_bin(
    bin: &Path,
    env: &BTreeMap<String, String>,
    dir: &Path,
    workspace: &Path,
) -> ActionRun {
    let outputs = dir.join("github_output");
    let summary = dir.join("step_summary.md");
    let _ = std::fs::remove_file(&outputs);
    let _ = std::fs::remove_file(&summary);
    let started = chrono::Utc::now().timestamp();
    let child = tokio::process::Command::new(bin)
        .arg("action")
        .env_clear()
        .envs(env)
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .current_dir(workspace)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let pid = child.id().unwrap_or_default();
    let out = child.wait_with_output().await.expect("the binary runs");
    let outputs_file = std::fs::read_to_string(&outputs).unwrap_or_default();
    ActionRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        outputs: parse_outputs(&outputs_file),
        outputs_file,
        summary: std::fs::read_to_string(&summary).unwrap_or_default(),
        pid,
        started,
    }
}
