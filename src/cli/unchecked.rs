//! `compute-bot run --unchecked`: exactly the given code, with no policy at
//! all — no static check and no runtime refusals in the runner — held only
//! by the container (network none, read-only root, capabilities dropped,
//! non-root, limits, seccomp or gVisor). For probing the sandbox itself
//! (`scripts/boundary-suite`); the Action has no such input.
//!
//! The sandbox's own job check ([`crate::sandbox::Job`]: input names and
//! the size of `/data`) still applies: it protects the bot, not a policy.

use crate::sandbox::RuntimeRules;

use super::{Format, RunArgs};

/// The line printed before anything else of an unchecked run.
const WARNING: &str = "WARNING: unchecked run: no policy check and no runtime \
     refusals; only the container (network none, read-only root, no capabilities, non-root, \
     limits, seccomp or gVisor, no program starts) holds this code";

/// Says loudly, before the run, that nothing but the container holds the
/// code: the first line of the text output, or on stderr when stdout is
/// JSON (which says `"unchecked": true` itself).
pub(crate) fn warn(json: bool) {
    if json {
        eprintln!("{WARNING}");
    } else {
        println!("{WARNING}");
    }
}

/// The runtime rules of an unchecked run: none. The runner still records
/// what the code tried (the outcome's `audit`) but refuses nothing.
pub(crate) fn rules() -> RuntimeRules {
    RuntimeRules::default()
}

/// Why `--unchecked` cannot go with the other flags given, if it cannot:
/// it runs one file in the sandbox, not the loop (a goal, a policy, a
/// schema, repeats or Markdown all need the loop, which always checks).
pub(crate) fn conflict(args: &RunArgs) -> Option<String> {
    if args.code.is_none() {
        return Some(
            "--unchecked runs exactly the file given with --code; pass --code FILE".into(),
        );
    }
    let (flag, why) = if args.goal.is_some() {
        ("--goal", "the loop always checks the code")
    } else if args.policy.is_some() {
        ("--policy", "an unchecked run applies no policy")
    } else if args.schema.is_some() {
        ("--schema", "validation needs the loop, which always checks")
    } else if args.repeat.is_some() {
        ("--repeat", "repeats need the loop, which always checks")
    } else if args.format == Format::Markdown {
        (
            "--format markdown",
            "Markdown needs the loop; use --format text or json",
        )
    } else {
        return None;
    };
    Some(format!(
        "--unchecked cannot go with {flag}: {why}; drop one of them"
    ))
}

/// The outcome's JSON with `"unchecked": true` added at the top level.
pub(crate) fn mark(mut outcome: serde_json::Value) -> serde_json::Value {
    if let Some(map) = outcome.as_object_mut() {
        map.insert("unchecked".into(), serde_json::Value::Bool(true));
    }
    outcome
}
