//! action.yml, the Dockerfile and the example workflows agree with the code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use compute_bot::github::actions::event::ActionInputs;
use compute_bot::github::actions::workflow::Outputs;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const INPUTS: [&str; 18] = [
    "github_token",
    "bot_login",
    "policy",
    "command",
    "provider",
    "model",
    "base_url",
    "api_key",
    "fallback_provider",
    "fallback_model",
    "fallback_base_url",
    "fallback_api_key",
    "goal",
    "code",
    "inputs",
    "issue",
    "watches",
    "watch",
];

#[test]
fn action_declares_the_inputs_the_bot_reads() {
    let a = yaml("action.yml");
    let declared: BTreeSet<&str> = a["inputs"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(declared, INPUTS.into_iter().collect());
    assert!(declared.iter().all(|k| !k.contains('-')));
    assert_eq!(
        a["inputs"]["github_token"]["default"],
        "${{ github.token }}"
    );
    assert_eq!(a["inputs"]["command"]["default"], "/compute");
    assert_eq!(a["runs"]["using"], "docker");
    // A prebuilt image by digest: nothing is compiled on the user's runner.
    let image = a["runs"]["image"].as_str().unwrap();
    let digest = image
        .strip_prefix("docker://ghcr.io/")
        .and_then(|r| r.split_once("/compute-bot@sha256:"))
        .map(|(_, d)| d)
        .unwrap_or_else(|| panic!("runs.image {image} is not a GHCR image by digest"));
    assert!(digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(a["runs"]["args"], serde_json::json!(["action"]));

    // Every declared input reaches ActionInputs through its INPUT_ variable.
    let vars: BTreeMap<String, String> = INPUTS
        .iter()
        .map(|k| (format!("INPUT_{}", k.to_ascii_uppercase()), "7".to_string()))
        .collect();
    let i = ActionInputs::from_map(&vars).unwrap();
    assert_eq!(i.github_token.unwrap().expose(), "7");
    assert_eq!(i.api_key.unwrap().expose(), "7");
    assert_eq!(i.fallback_api_key.unwrap().expose(), "7");
    for v in [
        i.policy,
        i.provider,
        i.model,
        i.base_url,
        i.fallback_provider,
        i.fallback_model,
        i.fallback_base_url,
        i.goal,
        i.code,
        i.watches,
    ] {
        assert_eq!(v.as_deref(), Some("7"));
    }
    assert_eq!(i.command, "7");
    assert_eq!(i.inputs, vec!["7"]);
    assert_eq!(i.issue, Some(7));
    assert_eq!(i.watch, vec!["7"]);
    assert_eq!(a["inputs"]["watches"]["default"], ".github/compute");
}

#[test]
fn action_declares_the_outputs_the_bot_writes() {
    let a = yaml("action.yml");
    let declared: BTreeSet<String> = a["outputs"].as_object().unwrap().keys().cloned().collect();
    let written: BTreeSet<String> = Outputs::default()
        .pairs()
        .into_iter()
        .map(|(k, _)| k.to_string())
        .collect();
    assert_eq!(declared, written);
}

#[test]
fn example_workflows_use_declared_inputs_and_least_privilege() {
    let declared: BTreeSet<&str> = INPUTS.into_iter().collect();
    for (file, trigger) in [
        ("examples/workflows/compute-comment.yml", "issue_comment"),
        ("examples/workflows/compute-weekly.yml", "schedule"),
        (
            "examples/workflows/compute-dispatch.yml",
            "workflow_dispatch",
        ),
        ("examples/workflows/compute-watches.yml", "pull_request"),
    ] {
        let w = yaml(file);
        assert!(w["on"].get(trigger).is_some(), "{file}: no {trigger}");
        // Nothing at workflow level; the job asks for what it needs.
        assert_eq!(w["permissions"], serde_json::json!({}), "{file}");
        let perms = w["jobs"]["compute"]["permissions"].as_object().unwrap();
        assert_eq!(perms["contents"], "read", "{file}");
        assert_eq!(perms["issues"], "write", "{file}");
        assert!(
            perms
                .values()
                .all(|v| v == "read" || v == "write" || v == "none"),
            "{file}"
        );
        let steps = w["jobs"]["compute"]["steps"].as_array().unwrap();
        let bot = steps
            .iter()
            .find(|s| s.get("id").and_then(Value::as_str) == Some("compute"))
            .unwrap();
        for key in bot["with"].as_object().unwrap().keys() {
            assert!(
                declared.contains(key.as_str()),
                "{file}: unknown input {key}"
            );
        }
    }
    let c = yaml("examples/workflows/compute-comment.yml");
    assert_eq!(
        c["on"]["issue_comment"]["types"],
        serde_json::json!(["created"])
    );
}
