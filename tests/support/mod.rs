//! Loopback stand-ins shared by the integration tests: the GitHub API and
//! the model providers, speaking their real wire formats and keeping state.
#![allow(dead_code)]

pub mod engine_proxy;
pub mod github_standin;
pub mod llm_standin;

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
