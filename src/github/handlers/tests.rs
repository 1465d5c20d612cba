//! The handlers' in-process tester (bors style: each handler's test sits
//! next to it, in a `#[cfg(test)] mod tests` of its own file, and snapshots
//! the comment it posts), and the dispatcher's own tests.
//!
//! A [`Tester`] is the GitHub stand-in of the integration tests (a loopback
//! server speaking GitHub's REST wire format, with state; octocrab runs
//! unmodified against it), a workspace with `data/sales.csv`, a policy, and
//! the scripted executor of the loop tests in place of Docker, handed to
//! the bot through [`Session::with_executor`] (the one seam: the handlers
//! reach the sandbox only through `ctx.session`). [`Tester::comment`] does
//! what `compute-bot action` does with an `issue_comment` event — parse the
//! command, the policy's first decision, [`on_comment`], [`conclude`] — and
//! returns what the thread then shows.
//!
//! The file is named `tests.rs` so that the layering check
//! (`src/layering.rs`) reads it as test code, as it does each handler's
//! `#[cfg(test)] mod tests`.
//!
//! Why unit tests and not an integration test crate: [`on_comment`], `Ctx`
//! and `Thread` are `pub(crate)`, and reaching them from `tests/` would need
//! a public test hook in the library's API. Here the stand-in and the
//! scripted executor are compiled into the library's tests by `#[path]`
//! (only the five files the stand-in is made of, and the executor; not the
//! rest of `tests/support`, which runs the binary and the engine).

// Written for many tests; each file's helpers are used by some of them.
// The function length rule holds for src/ and crates/*/src/, not for
// tests/support (Cargo.toml, `[workspace.lints]`).
#[allow(dead_code)]
#[path = "../../../tests/support/git_store.rs"]
mod git_store;
#[allow(dead_code, clippy::too_many_lines)]
#[path = "../../../tests/support/github_activity.rs"]
mod github_activity;
#[allow(dead_code, clippy::too_many_lines)]
#[path = "../../../tests/support/github_git.rs"]
mod github_git;
#[allow(dead_code)]
#[path = "../../../tests/support/github_pulls.rs"]
mod github_pulls;
// (It allows dead code itself.)
#[allow(clippy::too_many_lines)]
#[path = "../../../tests/support/github_standin.rs"]
pub(crate) mod github_standin;
#[allow(dead_code)]
#[path = "../../../tests/support/scripted_executor.rs"]
pub(crate) mod scripted_executor;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::github::actions::event::ActionEnv;
use crate::github::command;
use crate::github::rest::client::GitHub;
use crate::github::thread::{Ctx, Thread, conclude, refusal_reply};
use crate::policy::{Act, Actor, Authorization, Permission, Policy};
use crate::sandbox::{Runtime, Session};

use super::{act, on_comment};
use github_standin::{GitHubStandIn, StoredComment};
pub(crate) use scripted_executor::{Scripted, ScriptedExecutor};

/// The repository of every test.
pub(crate) const REPO: &str = "octo-org/data";
/// The issue every comment is written on.
pub(crate) const ISSUE: u64 = 7;
/// The workflow token the stand-in requires.
const TOKEN: &str = "ghs_standin_token_8c1d7e";
/// `data/sales.csv` in the workspace.
pub(crate) const CSV: &str = "region,amount\nnorth,10\nsouth,32\n";
/// Exact code the policy of `policies/escalate.yml` escalates (`hashlib` is
/// outside its allowlist).
pub(crate) const ESCALATING: &str = "import hashlib\nimport json\nimport pandas as pd\ndf = pd.read_csv(\"/data/sales.csv\")\nprint(json.dumps({\"digest\": hashlib.sha256(b\"x\").hexdigest()[:8], \"total\": int(df[\"amount\"].sum())}))\n";

/// `code` as a comment's fenced Python block (`code` ends with `\n`).
pub(crate) fn fenced(code: &str) -> String {
    format!("```python\n{code}```")
}

/// The text of a policy shipped in `policies/`.
pub(crate) fn shipped_policy(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("policies")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The stand-in, the workspace, the policy and the scripted executor of one
/// test (see the module docs).
pub(crate) struct Tester {
    /// The GitHub stand-in (state, fault injection).
    pub(crate) gh: GitHubStandIn,
    /// The executor every run goes to.
    pub(crate) executor: Arc<ScriptedExecutor>,
    session: Session,
    policy: Policy,
    dir: tempfile::TempDir,
    runs: u32,
}

/// What one comment led to.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The `status` output.
    pub(crate) status: String,
    /// The reactions on the asking comment, in order.
    pub(crate) reactions: Vec<String>,
    /// The bot's comments written or edited in this run, oldest first.
    pub(crate) posted: Vec<StoredComment>,
}

impl Answer {
    /// The status, the reactions and every comment the run wrote: the text
    /// a snapshot holds.
    pub(crate) fn shown(&self) -> String {
        let mut out = format!(
            "status: {}\nreactions: {}\n",
            self.status,
            self.reactions.join(", ")
        );
        for c in &self.posted {
            out.push_str(&format!("\n--- comment by {} ---\n{}\n", c.author, c.body));
        }
        out
    }
}

/// The snapshot settings of the handlers' tests: what varies between runs
/// (durations, times, the stand-in's port, the bot's version) replaced;
/// each snapshot is named after its test alone.
pub(crate) fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(
        &format!(r"\b{}\b", env!("CARGO_PKG_VERSION").replace('.', r"\.")),
        "[version]",
    );
    s.add_filter(r"\b\d+(\.\d+)?\s?(ms|s)\b", "[duration]");
    s.add_filter(
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "[time]",
    );
    s.add_filter(r"127\.0\.0\.1:\d+", "[stand-in]");
    s
}

/// Snapshots what an [`Answer`] shows ([`Answer::shown`]) under the test's
/// name, with the [`settings`]: the whole text is compared.
macro_rules! assert_answer {
    ($answer:expr) => {
        $crate::github::handlers::tests::settings()
            .bind(|| insta::assert_snapshot!($answer.shown()))
    };
}
pub(crate) use assert_answer;

impl Tester {
    /// [`REPO`] with issue [`ISSUE`]; `alice` (write), `maint` (maintain)
    /// and `rita` (read); `data/sales.csv` ([`CSV`]) in the workspace;
    /// `policy` (YAML); every run answered by `script`, in order.
    pub(crate) async fn new(policy: &str, script: impl IntoIterator<Item = Scripted>) -> Tester {
        let gh = GitHubStandIn::start().await;
        gh.add_repo(REPO);
        gh.add_issue(REPO, ISSUE);
        for (login, role) in [("alice", "write"), ("maint", "maintain"), ("rita", "read")] {
            gh.set_permission(REPO, login, role);
        }
        gh.require_token(TOKEN);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("ws/data");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("sales.csv"), CSV).unwrap();
        let policy = Policy::from_yaml_str(policy, "test.yml").expect("a valid policy");
        let executor = Arc::new(ScriptedExecutor::new(&policy, script));
        Tester {
            gh,
            session: Session::with_executor(executor.clone()),
            executor,
            policy,
            dir,
            runs: 0,
        }
    }

    /// The workspace (the checkout).
    pub(crate) fn ws(&self) -> std::path::PathBuf {
        self.dir.path().join("ws")
    }

    /// The environment of run `run_id` (`issue_comment`).
    fn vars(&self, run_id: &str) -> BTreeMap<String, String> {
        let root = self.dir.path();
        [
            ("GITHUB_EVENT_NAME", "issue_comment".to_string()),
            (
                "GITHUB_EVENT_PATH",
                root.join("event.json").display().to_string(),
            ),
            ("GITHUB_REPOSITORY", REPO.to_string()),
            ("GITHUB_API_URL", self.gh.uri()),
            ("GITHUB_SERVER_URL", "https://github.example".to_string()),
            ("GITHUB_RUN_ID", run_id.to_string()),
            ("GITHUB_RUN_ATTEMPT", "1".to_string()),
            ("GITHUB_WORKSPACE", self.ws().display().to_string()),
            ("GITHUB_OUTPUT", root.join("output").display().to_string()),
            ("INPUT_GITHUB_TOKEN", TOKEN.to_string()),
            ("INPUT_COMMAND", "/compute".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// `author` writes `body` on [`ISSUE`]; the bot answers it as the
    /// action does (run ids 9001, 9002, … in order).
    pub(crate) async fn comment(&mut self, author: &str, body: &str) -> Answer {
        self.runs += 1;
        let run_id = (9000 + self.runs).to_string();
        let id = self.gh.seed_comment(REPO, ISSUE, author, body);
        let before: BTreeMap<u64, String> = self
            .gh
            .comments(REPO, ISSUE)
            .into_iter()
            .map(|c| (c.id, c.body))
            .collect();
        let vars = self.vars(&run_id);
        let output = self.dir.path().join("output");
        std::fs::write(&output, "").unwrap();
        let env = ActionEnv::from_map(&vars).expect("a runner's environment");
        let command = command::parse(body, "/compute").expect("a command");
        let actor = Actor {
            login: author.to_string(),
            is_bot: false,
            edited: false,
        };
        let check = match self.policy.authorize(&actor, act(&command)) {
            Authorization::Ignore(why) => panic!("the policy ignores it: {why}"),
            Authorization::NeedsPermission(check) => check,
        };
        let gh = GitHub::new(&env.api_url, env.token().unwrap(), env.repository.clone())
            .expect("a client");
        let fetched = crate::github::activity::Cache::default();
        let ctx = Ctx {
            env: &env,
            vars: &vars,
            policy: &self.policy,
            gh: &gh,
            prefix: "/compute",
            runtime: Runtime::Runc,
            session: &self.session,
            fetched: &fetched,
        };
        let mut thread = Thread::new(&gh, Some(ISSUE), Some(id));
        let end = on_comment(&ctx, &mut thread, ISSUE, command, check).await;
        conclude(&ctx, thread, end).await;
        let outputs = std::fs::read_to_string(&output).unwrap();
        let status = outputs
            .lines()
            .find_map(|l| l.strip_prefix("status="))
            .unwrap_or_default()
            .to_string();
        let posted = self
            .gh
            .comments(REPO, ISSUE)
            .into_iter()
            .filter(|c| c.id != id && before.get(&c.id) != Some(&c.body))
            .collect();
        Answer {
            status,
            reactions: self.gh.reactions(id),
            posted,
        }
    }
}

// The dispatcher's tests.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_subcommand_is_answered_with_what_it_takes() {
    let mut t = Tester::new(&shipped_policy("default.yml"), []).await;
    let answer = t.comment("maint", "/compute approve xyz").await;
    assert_answer!(answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_with_neither_goal_nor_code_gets_the_usage() {
    let mut t = Tester::new(&shipped_policy("default.yml"), []).await;
    let answer = t.comment("alice", "/compute").await;
    assert_answer!(answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_with_neither_goal_nor_code_gets_the_usage() {
    let mut t = Tester::new(&shipped_policy("default.yml"), []).await;
    let answer = t.comment("alice", "/compute plan").await;
    assert_answer!(answer);
}

fn policy(yaml: &str) -> Policy {
    Policy::from_yaml_str(yaml, "test.yml").unwrap()
}

/// The policy's decision for `user` with `has`, and the reply to a refusal.
fn authorize(
    user: &str,
    has: Permission,
    policy: &Policy,
    prefix: &str,
    act: Act,
) -> Result<(), String> {
    let actor = Actor {
        login: user.into(),
        is_bot: false,
        edited: false,
    };
    match policy.authorize(&actor, act) {
        Authorization::Ignore(why) => panic!("ignored: {why}"),
        Authorization::NeedsPermission(check) => check
            .decide(has)
            .map_err(|why| refusal_reply(act, &why, prefix)),
    }
}

#[test]
fn a_listed_user_still_needs_the_permission_and_the_reply_says_what_is_missing() {
    let p = policy(
        "version: 1\nwho:\n  users: [Alice]\n  min_permission: write\nescalation:\n  approvers: [maint]\n",
    );
    let run = |u: &str, has| authorize(u, has, &p, "/compute", Act::Run);
    assert_eq!(run("alice", Permission::Write), Ok(()));
    assert!(
        matches!(run("alice", Permission::Read), Err(t) if t.contains("**write**") && t.contains("**read**"))
    );
    assert!(matches!(run("bob", Permission::Admin), Err(t) if t.contains("lists")));
    assert!(matches!(run("alice", Permission::None), Err(t) if t.contains("**none**")));
    let esc = |u: &str, has, k| authorize(u, has, &p, "/compute", k);
    assert_eq!(esc("MAINT", Permission::Maintain, Act::Approve), Ok(()));
    assert!(
        matches!(esc("maint", Permission::Write, Act::Approve), Err(t) if t.contains("approve") && t.contains("maintain"))
    );
    assert!(
        matches!(esc("admin", Permission::Admin, Act::Approve), Err(t) if t.contains("approvers"))
    );
    assert!(
        matches!(esc("maint", Permission::Write, Act::Deny), Err(t) if t.contains("deny") && t.contains("maintain"))
    );
    let open = policy("version: 1\n");
    assert_eq!(
        authorize("x", Permission::Admin, &open, "/c", Act::Deny),
        Ok(())
    );
    assert_eq!(
        authorize("x", Permission::Write, &open, "/c", Act::Run),
        Ok(())
    );
}
