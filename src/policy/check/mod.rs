//! The static check: parse the code with ruff's Python parser and walk the
//! AST against the policy.
//!
//! This is a first gate that explains itself, not the security boundary:
//! the container (no network, read-only root, caps dropped, limits) is. The
//! check errs towards denying; what it cannot resolve statically (computed
//! attribute names, dynamic imports, passing `getattr` around) it denies.

mod calls;
mod checker;
mod names;
mod paths;
mod patterns;
pub(crate) use patterns::allows;
mod resolve;
mod source;

use std::collections::HashSet;

use ruff_python_ast::visitor::Visitor;
use ruff_text_size::TextSize;

use self::checker::Checker;
use self::patterns::Patterns;
use self::resolve::{Binder, Env};
use self::source::LineIndex;
use super::config::Policy;
use super::rules::RuleId;
use super::verdict::{Finding, Severity, Verdict};

/// Statements and expressions nested deeper than this are not followed;
/// the code is denied as `too-complex`. CPython itself refuses more than 200
/// nested parentheses.
const MAX_NESTING: usize = 300;

/// Checks `code` against `policy` and returns the verdict.
///
/// Never panics and never hangs: the size limit is checked first, nesting
/// is bounded, and the parse and walk run on a dedicated thread with a
/// stack sized for the input (ruff's parser grows its own stack for deep
/// nesting; dropping a very deep tree is recursive). A failure of that
/// thread is reported as an `internal-error` deny.
pub fn check_code(policy: &Policy, code: &str) -> Verdict {
    // Policies built in code are not validated; never go past the hard cap.
    let max = policy
        .code
        .max_bytes
        .bytes()
        .min(super::code::MAX_CODE_BYTES_LIMIT.bytes());
    if code.len() as u64 > max {
        let f = raw(
            RuleId::CodeTooLarge,
            TextSize::new(0),
            format!(
                "the code is {} bytes, more than the policy's code.max_bytes of {}; shorten it (load data from inputs instead of embedding it)",
                code.len(),
                policy.code.max_bytes
            ),
        );
        return finish(
            policy,
            code,
            Analysis {
                findings: vec![f],
                imports: Vec::new(),
            },
        );
    }
    let stack = 16 * 1024 * 1024 + code.len().saturating_mul(384);
    let result = std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("policy-check".into())
            .stack_size(stack)
            .spawn_scoped(scope, || analyze(policy, code));
        match handle {
            Ok(h) => h.join().map_err(|_| "the checker panicked".to_string()),
            Err(e) => Err(format!("cannot start the checker thread: {e}")),
        }
    });
    let analysis = match result {
        Ok(a) => a,
        Err(msg) => {
            tracing::error!("policy check failed: {msg}");
            Analysis {
                findings: vec![raw(
                    RuleId::InternalError,
                    TextSize::new(0),
                    format!("{msg}; the code is denied. Please report this with the code attached"),
                )],
                imports: Vec::new(),
            }
        }
    };
    finish(policy, code, analysis)
}

/// What the check found: the findings, and the modules the code imports as
/// the checker resolved them.
struct Analysis {
    findings: Vec<RawFinding>,
    imports: Vec<String>,
}

/// A finding before positions and severities are attached.
struct RawFinding {
    rule: RuleId,
    offset: TextSize,
    message: String,
}

fn raw(rule: RuleId, offset: TextSize, message: String) -> RawFinding {
    RawFinding {
        rule,
        offset,
        message,
    }
}

fn finish(policy: &Policy, code: &str, analysis: Analysis) -> Verdict {
    let Analysis {
        findings: mut raws,
        imports,
    } = analysis;
    raws.sort_by_key(|r| (r.offset, r.rule));
    let index = LineIndex::new(code);
    let mut seen = HashSet::new();
    let mut findings = Vec::new();
    for r in raws {
        if !seen.insert((r.rule, r.offset)) {
            continue;
        }
        let (line, column) = index.position(code, r.offset);
        let severity = if r.rule.rule().severity == Severity::Info {
            Severity::Info
        } else if r.rule.escalatable() && policy.code.escalates(r.rule) {
            Severity::Escalate
        } else {
            Severity::Deny
        };
        findings.push(Finding {
            rule: r.rule.as_str().to_string(),
            severity,
            message: r.message,
            line,
            column,
            snippet: index.snippet(code, line),
        });
    }
    Verdict::from_findings(findings).with_imports(imports)
}

/// Source checks, name resolution, then the walk that reports findings.
fn analyze(policy: &Policy, code: &str) -> Analysis {
    let parsed = match source::parse(code) {
        Ok(p) => p,
        Err(finding) => {
            return Analysis {
                findings: vec![finding],
                imports: Vec::new(),
            };
        }
    };
    let module = parsed.syntax();
    let mut binder = Binder::default();
    // Two rounds so that names bound later in the file (functions, loops)
    // are known everywhere; the analysis is flow-insensitive on purpose.
    for _ in 0..2 {
        binder.visit_body(&module.body);
    }
    let mut checker = Checker {
        policy,
        patterns: Patterns::new(policy),
        env: Env {
            bindings: &binder.bindings,
            consts: &binder.consts,
        },
        findings: Vec::new(),
        imports: Vec::new(),
        depth: 0,
        too_deep: false,
        callees: HashSet::new(),
    };
    checker.visit_body(&module.body);
    Analysis {
        findings: checker.findings,
        imports: checker.imports,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_lists_the_imports_as_resolved() {
        let code = "from __future__ import annotations\n\
                    import pandas as pd, os.path\n\
                    from matplotlib import pyplot as plt\n\
                    import json\n\
                    import numpy.linalg\n\
                    mod = __import__('stat' + 'istics')\n\
                    import socket\n\
                    import pandas\n\
                    from . import sibling\n";
        let v = check_code(&Policy::default(), code);
        assert_eq!(
            v.imports(),
            [
                "pandas",
                "os.path",
                "matplotlib",
                "json",
                "numpy.linalg",
                "statistics",
                "socket"
            ]
        );
        // Denied code still lists what it imports; code that does not parse lists nothing.
        assert_eq!(v.decision, crate::policy::Decision::Deny);
        assert!(
            check_code(&Policy::default(), "import json\nx = (")
                .imports()
                .is_empty()
        );
        // Only the allowed submodule is checked when the package is not allowed.
        let p = Policy::from_yaml_str("code:\n  allow_imports: [concurrent.futures]\n", "p.yml")
            .unwrap();
        assert_eq!(
            check_code(&p, "from concurrent import futures\n").imports(),
            ["concurrent.futures"]
        );
    }
}
