//! One fixture for the tests that run `compute-bot action` as a runner runs
//! it: the GitHub stand-in with a repository, an issue and people with
//! permissions, a workspace (checkout) with its files and policy, the event
//! file, and the binary run with exactly a runner's environment
//! ([`super::action_env`], [`super::run_action`]).
//!
//! What differs between tests is set on the builder (more people, pull
//! requests, workspace files, the policy) or per run on the [`ActionEnv`]
//! (inputs, the model stand-in, variables taken away):
//!
//! ```ignore
//! let f = ActionFixture::builder().policy(&escalate_policy()).start().await;
//! f.comment("alice", "/compute total\n```python\nprint('{}')\n```");
//! let run = f.run_env(f.env(COMMENT, "9001").model(&llm, CANARY_KEY)).await;
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ActionRun;
use super::github_standin::{DEFAULT_APP_LOGIN, GitHubStandIn, StoredComment};
use super::llm_standin::{DEFAULT_MODEL, LlmStandin};

/// The repository every action test works on.
pub const REPO: &str = "octo-org/data";
/// The token the workflow hands the action (the stand-in requires it).
pub const TOKEN: &str = "ghs_standin_token_8c1d7e";
/// The issue that exists from the start; [`ActionFixture::comment`] posts there.
pub const ISSUE: u64 = 7;
/// The event of a comment.
pub const COMMENT: &str = "issue_comment";
/// `data/sales.csv` in the workspace: 42 in total over two rows.
pub const CSV: &str = "region,amount\nnorth,10\nsouth,32\n";
/// Exact code that escalates under `policies/escalate.yml` (`hashlib` is
/// outside its allowlist): the digest of `x` and the total of the CSV.
pub const ESCALATING: &str = "import hashlib\nimport json\nimport pandas as pd\ndf = pd.read_csv(\"/data/sales.csv\")\nprint(json.dumps({\"digest\": hashlib.sha256(b\"x\").hexdigest()[:8], \"total\": int(df[\"amount\"].sum())}))\n";

/// The hex SHA-256 of `s`, as the bot shows code hashes.
pub fn sha256(s: &str) -> String {
    compute_bot::sandbox::sha256_hex(s.as_bytes())
}

/// The snapshot settings of a comment the bot wrote: each snapshot named
/// as given (not after its module) and kept in the test crate's own
/// `snapshots/` (`tests/action/snapshots`, `tests/loop/snapshots`), the
/// bot's version (in the footer) replaced.
/// `comment_settings().bind(|| insta::assert_snapshot!(name, body))`.
pub fn comment_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_snapshot_path(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/",
        env!("CARGO_CRATE_NAME"),
        "/snapshots"
    ));
    s.add_filter(
        &format!(r"\b{}\b", env!("CARGO_PKG_VERSION").replace('.', r"\.")),
        "[version]",
    );
    s
}

/// [`comment_settings`] for a comment of a run in the real sandbox: the
/// values that change between runs and machines replaced by a name in
/// brackets, everything else kept: `[digest]` the image's id, `[repo
/// digests]` the engine's names for it, `[pid]` a test process's id in a
/// registry repository, `[engine version]` Docker's, `[duration]` a time taken, `[memory]` a peak of
/// memory, `[timestamp]` a date and time, `[watch state]` a watch's encoded
/// history, `[preload]` and `[library reads]` what raced the code's
/// arrival, `[commit]` a commit of the files branch, `[checkout]` the
/// checkout's path, `[port]` the port of a loopback stand-in, `[tmp]` a temporary
/// directory.
pub fn sandbox_comment_settings() -> insta::Settings {
    let mut s = comment_settings();
    for (pattern, name) in SANDBOX_FILTERS {
        s.add_filter(pattern, *name);
    }
    // The checkout's own path (a policy the command line read from it).
    s.add_filter(&regex_escape(env!("CARGO_MANIFEST_DIR")), "[checkout]");
    s
}

/// `text` as a regular expression that matches exactly it.
fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

/// The filters of [`sandbox_comment_settings`], in order: each a regular
/// expression and the name that stands for what it matched.
const SANDBOX_FILTERS: &[(&str, &str)] = &[
    // The image's repository digests on the engine: none for a local build,
    // some after a pull or a push (another test's too, while it runs); in the
    // record all, in the sandbox table the first. First: the filters below
    // put brackets in them.
    (r#""digests":\[[^\]]*\]"#, r#""digests":[repo digests]"#),
    (
        r"(\| Image \| `[^`\n]*`(?: · id `[^`\n]*`)?)(?: · digest `[^`\n]*`)?",
        "${1} · [repo digest]",
    ),
    // The image's id, in full (the record) and shortened (the sandbox table).
    (r"sha256:[0-9a-f]{64}", "sha256:[digest]"),
    (r"sha256:[0-9a-f]{6,63}…", "sha256:[digest]…"),
    // A registry repository a test pushed, named after the test's process.
    (r"(/cbs-[a-z0-9-]+?)-\d+\b", "${1}-[pid]"),
    // The Docker engine's version in the record.
    (
        r#""engine":"[^"]*\(API [0-9.]+\)""#,
        r#""engine":"[engine version]""#,
    ),
    // A time measured: the record's milliseconds, and a time as people read
    // it (`21 ms`, `1.2 s`); a limit (`10s`) has no space and stays.
    (r#""duration_ms":\d+"#, r#""duration_ms":[duration]"#),
    (r"\b\d+(?:\.\d+)? (?:ms|s|min)\b", "[duration]"),
    // A peak of memory measured (a limit, `512MiB`, has no space and stays).
    (
        r"(?i)(peak memory:? (?:\| )?|whole container )\d+(?:\.\d+)? [KMG]?i?B\b",
        "${1}[memory]",
    ),
    // A date and time (a watch's history); a date alone is data and stays.
    (
        r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?",
        "[timestamp]",
    ),
    // A watch's state (its history with the times of its runs), hex-encoded.
    (
        r"(<!-- compute-bot:watch-state=)[0-9a-f]+",
        "${1}[watch state]",
    ),
    // Which preloaded modules were ready before the code arrived races the
    // code: the one or two rows that say it, as one.
    (
        r"(?m)(?:^\| (?:Preloaded before the code arrived|Not preloaded \(the code had arrived\)) \|[^\n]*\n)+",
        "| [preload] |\n",
    ),
    // How many of the image's libraries the code read depends on that race
    // too (none: no words at all).
    (
        r"(\| Files opened \| [^|\n]*?)(?: · \d+ read\(s\) of the image's own libraries)? \|",
        "${1} · [library reads] |",
    ),
    // The commit of a run's files on the files branch (its date is in it).
    (r"(/(?:blob|commit)/)[0-9a-f]{40}\b", "${1}[commit]"),
    (
        r"(Committed to branch `[^`\n]+` as \[`)[0-9a-f]{7,40}`",
        "${1}[commit]`",
    ),
    // The port of a loopback stand-in.
    (r"\b(127\.0\.0\.1|localhost):\d+", "${1}:[port]"),
    // A temporary directory (`tempfile`'s, under any `TMPDIR`).
    (r#"(?:/[^\s/`'"()|]+)*/\.tmp[A-Za-z0-9]{6}"#, "[tmp]"),
];

/// Snapshots the whole of a comment the bot wrote as `name`
/// ([`comment_settings`]): a comment that does not depend on the engine.
pub fn snapshot_comment(name: &str, body: &str) {
    comment_settings().bind(|| insta::assert_snapshot!(name, body));
}

/// Snapshots the whole of a comment of a run in the real sandbox as `name`,
/// its volatile values named ([`sandbox_comment_settings`]).
pub fn snapshot_sandbox_comment(name: &str, body: &str) {
    sandbox_comment_settings().bind(|| insta::assert_snapshot!(name, body));
}

/// `code` as a fenced Python block of a comment (`code` ends with `\n`).
pub fn fenced(code: &str) -> String {
    format!("```python\n{code}```")
}

/// The text of a policy shipped in `policies/` (e.g. `escalate.yml`).
pub fn shipped_policy(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("policies")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `policies/escalate.yml`: what is outside the allowlist waits for approval.
pub fn escalate_policy() -> String {
    shipped_policy("escalate.yml")
}

/// What differs between action tests, set before the stand-in starts.
pub struct ActionFixtureBuilder {
    permissions: Vec<(String, String)>,
    pull_requests: Vec<u64>,
    files: Vec<(PathBuf, Vec<u8>)>,
    policy: Option<String>,
}

impl ActionFixtureBuilder {
    /// Gives `login` a permission on [`REPO`] (`read`, `write`, `maintain`,
    /// `admin`); bots too (`dependabot[bot]`).
    pub fn permission(mut self, login: &str, role: &str) -> Self {
        self.permissions.push((login.to_string(), role.to_string()));
        self
    }

    /// Adds pull request `number` to [`REPO`].
    pub fn pull_request(mut self, number: u64) -> Self {
        self.pull_requests.push(number);
        self
    }

    /// Writes a workspace file (`rel` inside the checkout).
    pub fn file(mut self, rel: &str, contents: impl Into<Vec<u8>>) -> Self {
        self.files.push((PathBuf::from(rel), contents.into()));
        self
    }

    /// The workspace policy (`.github/compute-bot.yml`); none: the built-in one.
    pub fn policy(mut self, yaml: &str) -> Self {
        self.policy = Some(yaml.to_string());
        self
    }

    /// Starts the GitHub stand-in and writes the workspace.
    pub async fn start(self) -> ActionFixture {
        let gh = GitHubStandIn::start().await;
        gh.add_repo(REPO);
        gh.add_issue(REPO, ISSUE);
        for n in &self.pull_requests {
            gh.add_pull_request(REPO, *n);
        }
        for (login, role) in &self.permissions {
            gh.set_permission(REPO, login, role);
        }
        gh.require_token(TOKEN);
        let f = ActionFixture {
            gh,
            dir: tempfile::tempdir().expect("a temporary directory"),
        };
        std::fs::create_dir_all(f.ws()).unwrap();
        for (rel, contents) in &self.files {
            let path = f.ws().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, contents).unwrap();
        }
        if let Some(yaml) = &self.policy {
            f.policy(yaml);
        }
        f
    }
}

/// The GitHub stand-in, a workspace and an event file; runs the action.
pub struct ActionFixture {
    /// The GitHub stand-in (state, requests, fault injection).
    pub gh: GitHubStandIn,
    /// Holds the workspace (`ws/`), the event file and the runner's files.
    dir: tempfile::TempDir,
}

impl ActionFixture {
    /// The usual set-up: [`REPO`] with issue [`ISSUE`], `alice` (write),
    /// `maint` (maintain) and `rita` (read), and `data/sales.csv` ([`CSV`])
    /// in the workspace.
    pub fn builder() -> ActionFixtureBuilder {
        ActionFixtureBuilder {
            permissions: Vec::new(),
            pull_requests: Vec::new(),
            files: Vec::new(),
            policy: None,
        }
        .permission("alice", "write")
        .permission("maint", "maintain")
        .permission("rita", "read")
        .file("data/sales.csv", CSV)
    }

    /// [`ActionFixture::builder`] as it is.
    pub async fn new() -> ActionFixture {
        Self::builder().start().await
    }

    /// The usual set-up with pull request 8 and a bot, `dependabot[bot]`,
    /// that has write access.
    pub async fn with_pull_request_and_bot() -> ActionFixture {
        Self::builder()
            .pull_request(8)
            .permission("dependabot[bot]", "write")
            .start()
            .await
    }

    /// The directory the runner's files live in (the workspace is `ws/` in it).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The workspace (`GITHUB_WORKSPACE`, the checkout).
    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// The event file (`GITHUB_EVENT_PATH`).
    pub fn event_path(&self) -> PathBuf {
        self.dir.path().join("event.json")
    }

    /// Writes the event payload.
    pub fn write_event(&self, v: &Value) {
        std::fs::write(self.event_path(), serde_json::to_vec_pretty(v).unwrap()).unwrap();
    }

    /// Seeds a new comment by `author` on [`ISSUE`] and writes its `created` event.
    pub fn comment(&self, author: &str, body: &str) -> u64 {
        self.comment_on(ISSUE, author, body, "created")
    }

    /// Seeds a comment by `author` on `issue` and writes its `issue_comment`
    /// event with `action` (`created`, `edited`).
    pub fn comment_on(&self, issue: u64, author: &str, body: &str, action: &str) -> u64 {
        let id = self.gh.seed_comment(REPO, issue, author, body);
        self.write_event(&self.gh.issue_comment_event(id, action));
        id
    }

    /// Writes the workspace policy (`.github/compute-bot.yml`).
    pub fn policy(&self, yaml: &str) {
        std::fs::create_dir_all(self.ws().join(".github")).unwrap();
        std::fs::write(self.ws().join(".github/compute-bot.yml"), yaml).unwrap();
    }

    /// The environment a runner gives the action for `event` in run `run_id`.
    pub fn env(&self, event: &str, run_id: &str) -> ActionEnv {
        ActionEnv(super::action_env(
            event,
            &self.event_path(),
            REPO,
            &self.gh.uri(),
            run_id,
            &self.ws(),
            TOKEN,
        ))
    }

    /// Runs the action on the event written last, as a runner would.
    pub async fn run(&self, event: &str, run_id: &str) -> ActionRun {
        self.run_env(self.env(event, run_id)).await
    }

    /// Runs the action with exactly `env`.
    pub async fn run_env(&self, env: ActionEnv) -> ActionRun {
        super::run_action(&env.0, self.dir.path(), &self.ws()).await
    }

    /// Runs another build of the binary with exactly `env` (a benchmark's
    /// baseline).
    pub async fn run_env_bin(&self, bin: &std::path::Path, env: ActionEnv) -> ActionRun {
        super::run_action_bin(bin, &env.0, self.dir.path(), &self.ws()).await
    }

    /// The comments on `issue` written by the bot, oldest first.
    pub fn bot_comments(&self, issue: u64) -> Vec<StoredComment> {
        self.gh
            .comments(REPO, issue)
            .into_iter()
            .filter(|c| c.author == DEFAULT_APP_LOGIN)
            .collect()
    }

    /// The body of the bot's newest comment on `issue`.
    #[track_caller]
    pub fn newest_bot_body(&self, issue: u64) -> String {
        let bots = self.bot_comments(issue);
        bots.last().expect("a comment by the bot").body.clone()
    }

    /// The report file the run named in its `report_path` output.
    pub fn report(&self, run: &ActionRun) -> Value {
        let rel = run.out("report_path");
        assert!(!rel.is_empty(), "no report\n{}", run.log());
        let path = if Path::new(rel).is_absolute() {
            PathBuf::from(rel)
        } else {
            self.ws().join(rel)
        };
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    }
}

/// A runner's environment for one run, changed where a test needs it.
#[derive(Debug, Clone)]
pub struct ActionEnv(BTreeMap<String, String>);

impl ActionEnv {
    /// Sets a variable (an `INPUT_*`, `GITHUB_RUN_ATTEMPT`, ...).
    pub fn with(mut self, name: &str, value: impl Into<String>) -> Self {
        self.0.insert(name.to_string(), value.into());
        self
    }

    /// Takes a variable away.
    pub fn without(mut self, name: &str) -> Self {
        self.0.remove(name);
        self
    }

    /// The action's model inputs pointing at `llm` (its provider, the
    /// stand-in's model and base URL) with `key` as the `api_key` input.
    pub fn model(self, llm: &LlmStandin, key: &str) -> Self {
        self.with("INPUT_PROVIDER", llm.provider().to_string())
            .with("INPUT_MODEL", DEFAULT_MODEL)
            .with("INPUT_BASE_URL", llm.base_url())
            .with("INPUT_API_KEY", key)
    }
}
