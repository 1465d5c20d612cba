//! `compute-bot policy check`: validate a policy, or check code against it.

use std::fmt::Write as _;
use std::path::Path;

use super::{Decision, Policy, Verdict, check_code};

/// Exit code: the policy is valid / the code is allowed.
pub const EXIT_ALLOW: i32 = 0;
/// Exit code: the code is denied.
pub const EXIT_DENY: i32 = 1;
/// Exit code: the policy or the code file could not be read or is invalid.
const EXIT_ERROR: i32 = 2;
/// Exit code: the code needs a human approval.
pub const EXIT_ESCALATE: i32 = 3;

/// Runs `compute-bot policy check POLICY [--code FILE] [--format json]`.
///
/// Without `code_path`, prints the effective policy (defaults filled in) as
/// YAML on stdout and returns 0, or prints `file:line:column: message` on
/// stderr and returns 2. With `code_path`, prints the verdict and findings
/// (text, or the [`Verdict`] as JSON when `json`) and returns 0 allow,
/// 1 deny, 3 escalate, or 2 when the policy or the code file cannot be read.
pub fn check_command(policy_path: &Path, code_path: Option<&Path>, json: bool) -> i32 {
    let policy = match Policy::load(policy_path) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return EXIT_ERROR;
        }
    };
    let Some(code_path) = code_path else {
        print!("{}", policy.to_effective_yaml());
        return EXIT_ALLOW;
    };
    let code = match std::fs::read(code_path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "{}: the code is not UTF-8 (invalid byte at offset {}); save it as UTF-8",
                    code_path.display(),
                    e.utf8_error().valid_up_to()
                );
                return EXIT_ERROR;
            }
        },
        Err(e) => {
            eprintln!(
                "{}: cannot read the code file ({e}); check the path",
                code_path.display()
            );
            return EXIT_ERROR;
        }
    };
    let verdict = check_code(&policy, &code);
    if json {
        match serde_json::to_string_pretty(&verdict) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("cannot serialize the verdict: {e}");
                return EXIT_ERROR;
            }
        }
    } else {
        print!("{}", render_text(&verdict));
    }
    exit_code(verdict.decision)
}

/// The exit code for a decision: 0 allow, 1 deny, 3 escalate.
fn exit_code(decision: Decision) -> i32 {
    match decision {
        Decision::Allow => EXIT_ALLOW,
        Decision::Deny => EXIT_DENY,
        Decision::Escalate => EXIT_ESCALATE,
    }
}

/// The verdict as text: a headline, then `line:col rule severity message`
/// and the offending line for every finding.
pub fn render_text(verdict: &Verdict) -> String {
    let mut out = String::new();
    let decision = match verdict.decision {
        Decision::Allow => "allow",
        Decision::Deny => "deny",
        Decision::Escalate => "escalate",
    };
    let _ = writeln!(
        out,
        "{decision}: {} finding{}",
        verdict.findings.len(),
        if verdict.findings.len() == 1 { "" } else { "s" }
    );
    for f in &verdict.findings {
        let sev = match f.severity {
            super::Severity::Info => "info",
            super::Severity::Escalate => "escalate",
            super::Severity::Deny => "deny",
        };
        let _ = writeln!(
            out,
            "{}:{} {} {sev} {}",
            f.line, f.column, f.rule, f.message
        );
        if !f.snippet.is_empty() {
            let _ = writeln!(out, "    {}", f.snippet);
        }
    }
    out
}
