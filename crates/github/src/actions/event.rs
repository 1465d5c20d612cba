//! The Actions environment and the event that started the run.
//!
//! Everything is read from an explicit variable map (so tests never touch the
//! process environment) and from the event file named by `GITHUB_EVENT_PATH`,
//! which is read directly, never through a shell.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The API root used when `GITHUB_API_URL` is not set.
const DEFAULT_API_URL: &str = "https://api.github.com";
/// The web root used when `GITHUB_SERVER_URL` is not set.
const DEFAULT_SERVER_URL: &str = "https://github.com";
/// The comment command used when the `command` input is empty.
const DEFAULT_COMMAND: &str = "/compute";

pub use compute_bot_secret::Secret;

/// `owner/name` of a repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepoRef {
    /// The user or organization.
    pub owner: String,
    /// The repository name.
    pub name: String,
}

impl RepoRef {
    /// Parses `owner/name`; `what` names where the text came from, for the error.
    pub fn parse(text: &str, what: &str) -> Result<RepoRef, EnvError> {
        match text.trim().split_once('/') {
            Some((o, n)) if !o.is_empty() && !n.is_empty() && !n.contains('/') => Ok(RepoRef {
                owner: o.to_string(),
                name: n.to_string(),
            }),
            _ => Err(EnvError::Invalid {
                name: what.to_string(),
                message: format!("`{text}` is not `owner/name`"),
            }),
        }
    }
}

impl fmt::Display for RepoRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// A problem with the Actions environment variables.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A variable the Actions runner always sets is missing or empty.
    #[error(
        "the environment variable {0} is not set; compute-bot action must run inside a GitHub Actions job (the runner sets it)"
    )]
    Missing(String),
    /// A variable is set but cannot be used.
    #[error("the environment variable {name} is invalid: {message}")]
    Invalid {
        /// The variable name.
        name: String,
        /// What is wrong and what is expected.
        message: String,
    },
}

/// The action's inputs (`INPUT_*`, underscored names). Empty values count as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActionInputs {
    /// `INPUT_GITHUB_TOKEN`.
    pub github_token: Option<Secret>,
    /// `INPUT_POLICY`: path of the policy file in the workspace.
    pub policy: Option<String>,
    /// `INPUT_COMMAND`: the comment command, `/compute` when unset.
    pub command: String,
    /// `INPUT_PROVIDER`.
    pub provider: Option<String>,
    /// `INPUT_MODEL`.
    pub model: Option<String>,
    /// `INPUT_BASE_URL`.
    pub base_url: Option<String>,
    /// `INPUT_API_KEY`.
    pub api_key: Option<Secret>,
    /// `INPUT_FALLBACK_PROVIDER`: the provider of the model that answers
    /// while the first is unavailable.
    pub fallback_provider: Option<String>,
    /// `INPUT_FALLBACK_MODEL`.
    pub fallback_model: Option<String>,
    /// `INPUT_FALLBACK_BASE_URL`.
    pub fallback_base_url: Option<String>,
    /// `INPUT_FALLBACK_API_KEY`, sent only to the fallback's base URL.
    pub fallback_api_key: Option<Secret>,
    /// `INPUT_GOAL`.
    pub goal: Option<String>,
    /// `INPUT_CODE`.
    pub code: Option<String>,
    /// `INPUT_INPUTS`: comma- or newline-separated workspace paths.
    pub inputs: Vec<String>,
    /// `INPUT_ISSUE`: where to post for dispatch and schedule runs.
    pub issue: Option<u64>,
    /// `INPUT_WATCHES`: the folder of watch files (default `.github/compute`).
    pub watches: Option<String>,
    /// `INPUT_WATCH`: the watches to run (comma- or newline-separated names;
    /// none: every watch).
    pub watch: Vec<String>,
}

/// The parts of the Actions environment the bot uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionEnv {
    /// `GITHUB_EVENT_NAME`.
    pub event_name: String,
    /// `GITHUB_EVENT_PATH`.
    pub event_path: PathBuf,
    /// `GITHUB_REPOSITORY`.
    pub repository: RepoRef,
    /// `GITHUB_API_URL` (default `https://api.github.com`), without a trailing slash.
    pub api_url: String,
    /// `GITHUB_SERVER_URL` (default `https://github.com`), without a trailing slash.
    pub server_url: String,
    /// `GITHUB_RUN_ID`.
    pub run_id: String,
    /// `GITHUB_RUN_ATTEMPT` (1 when unset).
    pub run_attempt: u32,
    /// `GITHUB_WORKSPACE`.
    pub workspace: PathBuf,
    /// `GITHUB_OUTPUT`, when set.
    pub output: Option<PathBuf>,
    /// `GITHUB_STEP_SUMMARY`, when set.
    pub step_summary: Option<PathBuf>,
    /// The `INPUT_*` variables.
    pub inputs: ActionInputs,
}

fn get<'a>(vars: &'a BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    vars.get(name)
        .map(|s| s.as_str())
        .filter(|s| !s.trim().is_empty())
}

fn required<'a>(vars: &'a BTreeMap<String, String>, name: &str) -> Result<&'a str, EnvError> {
    get(vars, name).ok_or_else(|| EnvError::Missing(name.to_string()))
}

/// Splits a path list written with commas and/or newlines; blanks are dropped.
pub fn split_list(text: &str) -> Vec<String> {
    text.split([',', '\n'])
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses an issue number written as `12` or `#12`.
fn parse_issue_number(text: &str) -> Option<u64> {
    let t = text.trim();
    t.strip_prefix('#')
        .unwrap_or(t)
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
}

impl ActionInputs {
    /// Reads the `INPUT_*` variables.
    pub fn from_map(vars: &BTreeMap<String, String>) -> Result<ActionInputs, EnvError> {
        let s = |n: &str| get(vars, n).map(str::to_string);
        let issue = match get(vars, "INPUT_ISSUE") {
            None => None,
            Some(t) => Some(parse_issue_number(t).ok_or_else(|| EnvError::Invalid {
                name: "INPUT_ISSUE".into(),
                message: format!("`{t}` is not an issue number; write e.g. `12` or `#12`"),
            })?),
        };
        Ok(ActionInputs {
            github_token: s("INPUT_GITHUB_TOKEN").map(Secret::new),
            policy: s("INPUT_POLICY"),
            command: s("INPUT_COMMAND")
                .map(|c| c.trim().to_string())
                .unwrap_or_else(|| DEFAULT_COMMAND.to_string()),
            provider: s("INPUT_PROVIDER"),
            model: s("INPUT_MODEL"),
            base_url: s("INPUT_BASE_URL"),
            api_key: s("INPUT_API_KEY").map(Secret::new),
            fallback_provider: s("INPUT_FALLBACK_PROVIDER"),
            fallback_model: s("INPUT_FALLBACK_MODEL"),
            fallback_base_url: s("INPUT_FALLBACK_BASE_URL"),
            fallback_api_key: s("INPUT_FALLBACK_API_KEY").map(Secret::new),
            goal: s("INPUT_GOAL"),
            code: get(vars, "INPUT_CODE").map(str::to_string),
            inputs: get(vars, "INPUT_INPUTS")
                .map(split_list)
                .unwrap_or_default(),
            issue,
            watches: s("INPUT_WATCHES"),
            watch: get(vars, "INPUT_WATCH").map(split_list).unwrap_or_default(),
        })
    }
}

impl ActionEnv {
    /// Reads the environment from a variable map (use
    /// `std::env::vars().collect()` in the binary). A missing required
    /// variable gives an error naming it.
    pub fn from_map(vars: &BTreeMap<String, String>) -> Result<ActionEnv, EnvError> {
        let trim_url = |s: &str| s.trim().trim_end_matches('/').to_string();
        let run_attempt = match get(vars, "GITHUB_RUN_ATTEMPT") {
            None => 1,
            Some(t) => t.trim().parse().map_err(|_| EnvError::Invalid {
                name: "GITHUB_RUN_ATTEMPT".into(),
                message: format!("`{t}` is not a number"),
            })?,
        };
        Ok(ActionEnv {
            event_name: required(vars, "GITHUB_EVENT_NAME")?.trim().to_string(),
            event_path: PathBuf::from(required(vars, "GITHUB_EVENT_PATH")?),
            repository: RepoRef::parse(required(vars, "GITHUB_REPOSITORY")?, "GITHUB_REPOSITORY")?,
            api_url: trim_url(get(vars, "GITHUB_API_URL").unwrap_or(DEFAULT_API_URL)),
            server_url: trim_url(get(vars, "GITHUB_SERVER_URL").unwrap_or(DEFAULT_SERVER_URL)),
            run_id: required(vars, "GITHUB_RUN_ID")?.trim().to_string(),
            run_attempt,
            workspace: PathBuf::from(required(vars, "GITHUB_WORKSPACE")?),
            output: get(vars, "GITHUB_OUTPUT").map(PathBuf::from),
            step_summary: get(vars, "GITHUB_STEP_SUMMARY").map(PathBuf::from),
            inputs: ActionInputs::from_map(vars)?,
        })
    }

    /// The workflow token: `INPUT_GITHUB_TOKEN`.
    pub fn token(&self) -> Result<&Secret, EnvError> {
        self.inputs.github_token.as_ref().ok_or_else(|| {
            EnvError::Missing(
                "INPUT_GITHUB_TOKEN (the action input `github_token`, default `${{ github.token }}`)"
                    .into(),
            )
        })
    }

    /// The link to this workflow run (`{server}/{owner}/{repo}/actions/runs/{id}`).
    pub fn run_url(&self) -> String {
        format!(
            "{}/{}/actions/runs/{}",
            self.server_url, self.repository, self.run_id
        )
    }
}

/// A problem reading the event file.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// The file could not be read.
    #[error("cannot read the event file {path} (GITHUB_EVENT_PATH): {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON.
    #[error(
        "the event file {path} (GITHUB_EVENT_PATH) is not valid JSON: {message} at line {line}, column {column}"
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A field every payload of this event has is missing or has the wrong type.
    #[error(
        "the event file {path} has no usable `{field}` for a `{event}` event; is GITHUB_EVENT_NAME right?"
    )]
    Field {
        /// The file.
        path: PathBuf,
        /// The event name.
        event: String,
        /// The JSON path of the field, e.g. `comment.user.login`.
        field: String,
    },
    /// An input of a dispatch or schedule run is missing or unusable.
    #[error("{message}")]
    Input {
        /// The input name (`goal`, `issue`, ...).
        name: String,
        /// What is wrong and how to fix it.
        message: String,
    },
}

/// What started this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// A comment on an issue or pull request (`issue_comment`, created or edited).
    Comment {
        /// The repository the comment is in.
        repo: RepoRef,
        /// The issue or pull request number.
        issue_number: u64,
        /// True when the issue is a pull request.
        is_pull_request: bool,
        /// The comment id (for reactions).
        comment_id: u64,
        /// Who wrote it.
        author_login: String,
        /// True for `type: Bot` users and logins ending in `[bot]`.
        author_is_bot: bool,
        /// The comment text as written (CRLF kept).
        body: String,
        /// True for the `edited` action.
        edited: bool,
    },
    /// `workflow_dispatch`: inputs from the event payload and/or the action inputs.
    Dispatch {
        /// What to compute.
        goal: Option<String>,
        /// Exact code to run instead of generating it.
        code: Option<String>,
        /// Workspace paths given to the code.
        inputs: Vec<String>,
        /// Where to post the result.
        issue: Option<u64>,
    },
    /// `schedule`: everything comes from the action inputs.
    Schedule {
        /// What to compute.
        goal: Option<String>,
        /// Exact code to run instead of generating it.
        code: Option<String>,
        /// Workspace paths given to the code.
        inputs: Vec<String>,
        /// Where to post the result.
        issue: Option<u64>,
    },
    /// A `schedule` or `workflow_dispatch` run without a goal or code: run
    /// the repository's watches.
    Watches {
        /// The watches named by the `watch` input (none: every watch).
        names: Vec<String>,
    },
    /// A `pull_request` event (`opened`, `synchronize`, `reopened`): run the
    /// watches whose inputs the pull request changes.
    PullRequest {
        /// The pull request number.
        number: u64,
    },
    /// Nothing to do; exit 0 with a notice.
    Ignored {
        /// Why (for the notice).
        reason: String,
    },
}

/// Reads and parses a JSON event file, with the path and position in errors.
fn read_event_file(path: &Path) -> Result<Value, EventError> {
    let text = std::fs::read_to_string(path).map_err(|source| EventError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| EventError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// True for a login ending in `[bot]` or a user of type `Bot`.
pub fn is_bot(login: &str, user_type: Option<&str>) -> bool {
    login.ends_with("[bot]") || user_type.is_some_and(|t| t.eq_ignore_ascii_case("bot"))
}

fn pointer_str<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

/// A dispatch input from the payload, as text (numbers and booleans accepted).
fn payload_input(payload: &Value, name: &str) -> Option<String> {
    match payload.get("inputs")?.get(name)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Trigger {
    /// Works out what started the run from the environment and the event file.
    pub fn from_env(env: &ActionEnv) -> Result<Trigger, EventError> {
        match env.event_name.as_str() {
            "issue_comment" => Self::comment(env),
            "workflow_dispatch" => {
                let payload = read_event_file(&env.event_path)?;
                let pick = |input: &Option<String>, name: &str| {
                    input.clone().or_else(|| payload_input(&payload, name))
                };
                let goal = pick(&env.inputs.goal, "goal");
                let code = pick(&env.inputs.code, "code");
                let inputs = if env.inputs.inputs.is_empty() {
                    payload_input(&payload, "inputs")
                        .map(|s| split_list(&s))
                        .unwrap_or_default()
                } else {
                    env.inputs.inputs.clone()
                };
                let issue = match (env.inputs.issue, payload_input(&payload, "issue")) {
                    (Some(n), _) => Some(n),
                    (None, None) => None,
                    (None, Some(t)) => Some(parse_issue_number(&t).ok_or_else(|| {
                        EventError::Input {
                            name: "issue".into(),
                            message: format!(
                                "the workflow_dispatch input `issue` is `{t}`, not an issue number; write e.g. `12`"
                            ),
                        }
                    })?),
                };
                if no_goal_or_code(&goal, &code) {
                    let names = if env.inputs.watch.is_empty() {
                        payload_input(&payload, "watch")
                            .map(|s| split_list(&s))
                            .unwrap_or_default()
                    } else {
                        env.inputs.watch.clone()
                    };
                    return Ok(Trigger::Watches { names });
                }
                Ok(Trigger::Dispatch {
                    goal,
                    code,
                    inputs,
                    issue,
                })
            }
            "schedule" => {
                let i = &env.inputs;
                if no_goal_or_code(&i.goal, &i.code) {
                    return Ok(Trigger::Watches {
                        names: i.watch.clone(),
                    });
                }
                Ok(Trigger::Schedule {
                    goal: i.goal.clone(),
                    code: i.code.clone(),
                    inputs: i.inputs.clone(),
                    issue: i.issue,
                })
            }
            "pull_request" => Self::pull_request(env),
            other => Ok(Trigger::Ignored {
                reason: format!(
                    "compute-bot does not handle `{other}` events (it handles issue_comment, workflow_dispatch, schedule and pull_request)"
                ),
            }),
        }
    }

    fn pull_request(env: &ActionEnv) -> Result<Trigger, EventError> {
        let payload = read_event_file(&env.event_path)?;
        let field = |f: &str| EventError::Field {
            path: env.event_path.clone(),
            event: "pull_request".into(),
            field: f.into(),
        };
        let action = pointer_str(&payload, "/action").ok_or_else(|| field("action"))?;
        if !matches!(action, "opened" | "synchronize" | "reopened") {
            return Ok(Trigger::Ignored {
                reason: format!("pull_request action `{action}` is not handled"),
            });
        }
        let number = payload
            .pointer("/pull_request/number")
            .or_else(|| payload.get("number"))
            .and_then(Value::as_u64)
            .ok_or_else(|| field("pull_request.number"))?;
        Ok(Trigger::PullRequest { number })
    }

    fn comment(env: &ActionEnv) -> Result<Trigger, EventError> {
        let payload = read_event_file(&env.event_path)?;
        let field = |f: &str| EventError::Field {
            path: env.event_path.clone(),
            event: "issue_comment".into(),
            field: f.into(),
        };
        let action = pointer_str(&payload, "/action").ok_or_else(|| field("action"))?;
        let edited = match action {
            "created" => false,
            "edited" => true,
            other => {
                return Ok(Trigger::Ignored {
                    reason: format!("issue_comment action `{other}` is not handled"),
                });
            }
        };
        let issue_number = payload
            .pointer("/issue/number")
            .and_then(Value::as_u64)
            .ok_or_else(|| field("issue.number"))?;
        let is_pull_request = payload
            .pointer("/issue/pull_request")
            .is_some_and(|v| !v.is_null());
        let comment_id = payload
            .pointer("/comment/id")
            .and_then(Value::as_u64)
            .ok_or_else(|| field("comment.id"))?;
        let author_login = pointer_str(&payload, "/comment/user/login")
            .ok_or_else(|| field("comment.user.login"))?
            .to_string();
        let author_is_bot = is_bot(&author_login, pointer_str(&payload, "/comment/user/type"));
        let body = match payload.pointer("/comment/body") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(_) => return Err(field("comment.body")),
        };
        let repo = match pointer_str(&payload, "/repository/full_name") {
            Some(full) => RepoRef::parse(full, "repository.full_name in the event file")
                .map_err(|_| field("repository.full_name"))?,
            None => env.repository.clone(),
        };
        Ok(Trigger::Comment {
            repo,
            issue_number,
            is_pull_request,
            comment_id,
            author_login,
            author_is_bot,
            body,
            edited,
        })
    }
}

/// True when a dispatch or schedule run has neither a goal nor code: it
/// runs the watches then.
fn no_goal_or_code(goal: &Option<String>, code: &Option<String>) -> bool {
    goal.is_none() && code.as_deref().is_none_or(|c| c.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> BTreeMap<String, String> {
        [
            ("GITHUB_EVENT_NAME", "schedule"),
            ("GITHUB_EVENT_PATH", "/nonexistent/event.json"),
            ("GITHUB_REPOSITORY", "octo-org/data"),
            ("GITHUB_RUN_ID", "42"),
            ("GITHUB_WORKSPACE", "/ws"),
            ("INPUT_GOAL", "mean of x"),
            ("INPUT_ISSUE", "#7"),
            ("INPUT_INPUTS", "data/a.csv, data/b b.csv\n"),
            ("INPUT_GITHUB_TOKEN", "ghs_secret"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn reads_defaults_and_inputs() {
        let env = ActionEnv::from_map(&base()).unwrap();
        assert_eq!(env.api_url, DEFAULT_API_URL);
        assert_eq!(env.inputs.command, "/compute");
        assert_eq!(env.inputs.issue, Some(7));
        assert_eq!(env.inputs.inputs, vec!["data/a.csv", "data/b b.csv"]);
        assert_eq!(
            env.run_url(),
            "https://github.com/octo-org/data/actions/runs/42"
        );
        assert!(!format!("{env:?}").contains("ghs_secret"));
        assert_eq!(env.token().unwrap().expose(), "ghs_secret");
        assert!(env.inputs.github_token.is_some() && env.inputs.api_key.is_none());
        let mut vars = base();
        vars.remove("INPUT_GITHUB_TOKEN");
        let env = ActionEnv::from_map(&vars).unwrap();
        assert!(
            env.token()
                .unwrap_err()
                .to_string()
                .contains("INPUT_GITHUB_TOKEN")
        );
        assert!(env.inputs.github_token.is_none());
    }

    #[test]
    fn missing_variable_is_named() {
        for name in [
            "GITHUB_EVENT_NAME",
            "GITHUB_EVENT_PATH",
            "GITHUB_REPOSITORY",
            "GITHUB_RUN_ID",
            "GITHUB_WORKSPACE",
        ] {
            let mut vars = base();
            vars.remove(name);
            let err = ActionEnv::from_map(&vars).unwrap_err().to_string();
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn bad_issue_input_is_named() {
        let mut vars = base();
        vars.insert("INPUT_ISSUE".into(), "twelve".into());
        let err = ActionEnv::from_map(&vars).unwrap_err().to_string();
        assert!(
            err.contains("INPUT_ISSUE") && err.contains("twelve"),
            "{err}"
        );
    }

    #[test]
    fn schedule_without_goal_or_code_runs_the_watches() {
        let mut vars = base();
        let env = ActionEnv::from_map(&vars).unwrap();
        assert!(matches!(
            Trigger::from_env(&env).unwrap(),
            Trigger::Schedule { issue: Some(7), .. }
        ));
        vars.remove("INPUT_GOAL");
        let env = ActionEnv::from_map(&vars).unwrap();
        assert_eq!(
            Trigger::from_env(&env).unwrap(),
            Trigger::Watches { names: vec![] }
        );
        vars.insert("INPUT_WATCH".into(), "sales, churn\n".into());
        let env = ActionEnv::from_map(&vars).unwrap();
        assert_eq!(
            Trigger::from_env(&env).unwrap(),
            Trigger::Watches {
                names: vec!["sales".into(), "churn".into()]
            }
        );
    }

    #[test]
    fn bots_are_recognised() {
        assert!(is_bot("dependabot[bot]", Some("Bot")));
        assert!(is_bot("renovate[bot]", None));
        assert!(is_bot("some-app", Some("Bot")));
        assert!(!is_bot("octocat", Some("User")));
    }
}
