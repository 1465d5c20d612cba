//! The static check: parse the code with ruff's Python parser and walk the
//! AST against the policy.
//!
//! This is a first gate that explains itself, not the security boundary:
//! the container (no network, read-only root, caps dropped, limits) is. The
//! check errs towards denying; what it cannot resolve statically (computed
//! attribute names, dynamic imports, passing `getattr` around) it denies.

mod calls;
mod checker;
mod indirect;
mod names;
mod paths;
mod patterns;
pub use patterns::allows;
mod reach;
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

impl Policy {
    /// True when the static check lets code import `module` (`import
    /// module` alone is allowed): the one rule for what a preload may load
    /// before the code runs.
    pub fn allows_import(&self, module: &str) -> bool {
        check_code(self, &format!("import {module}\n")).decision == super::Decision::Allow
    }

    /// The preload of known code: the heavy modules among what the checked
    /// code may load ([`Verdict::import_candidates`], through
    /// [`compute_bot_sandbox::preload_for`]) that the policy lets code import;
    /// nothing when `sandbox.preload` is `[]`.
    pub fn preload_of(&self, verdict: &Verdict) -> Vec<String> {
        compute_bot_sandbox::preload_for(&verdict.import_candidates(), &self.sandbox.preload)
            .into_iter()
            .filter(|m| self.allows_import(m))
            .collect()
    }
}

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
                ..Analysis::default()
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
                ..Analysis::default()
            }
        }
    };
    finish(policy, code, analysis)
}

/// What the check found: the findings, the modules the code imports as
/// the checker resolved them, and `a.b` for each `from a import b`.
#[derive(Default)]
struct Analysis {
    findings: Vec<RawFinding>,
    imports: Vec<String>,
    from_names: Vec<String>,
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
        from_names,
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
    Verdict::from_findings(findings).with_imports(imports, from_names)
}

/// Source checks, name resolution, then the walk that reports findings.
fn analyze(policy: &Policy, code: &str) -> Analysis {
    let parsed = match source::parse(code) {
        Ok(p) => p,
        Err(finding) => {
            return Analysis {
                findings: vec![finding],
                ..Analysis::default()
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
            dicts: &binder.dicts,
        },
        findings: Vec::new(),
        imports: Vec::new(),
        from_names: Vec::new(),
        depth: 0,
        too_deep: false,
        callees: HashSet::new(),
    };
    checker.visit_body(&module.body);
    Analysis {
        findings: checker.findings,
        imports: checker.imports,
        from_names: checker.from_names,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_code_preloads_the_submodules_its_from_imports_name() {
        // `from scipy import stats` loads scipy.stats, the heavy part;
        // `scipy` alone is a lazy package that loads in milliseconds.
        let code = "import json\nimport pandas as pd\nfrom scipy import stats\n\
                    from matplotlib import pyplot as plt\nfrom pandas import DataFrame\n\
                    from sklearn.ensemble import RandomForestClassifier\n";
        let p = Policy::default();
        let v = check_code(&p, code);
        assert_eq!(v.decision, crate::Decision::Allow, "{v:?}");
        assert_eq!(
            p.preload_of(&v),
            [
                "pandas",
                "pandas.DataFrame",
                "scipy",
                "scipy.stats",
                "matplotlib",
                "matplotlib.pyplot",
                "sklearn.ensemble",
                "sklearn.ensemble.RandomForestClassifier"
            ]
        );
        // Never what the policy would not let the code import: here the
        // package is allowed but one submodule is denied.
        let strict = Policy::from_yaml_str(
            "code:\n  allow_imports: [json, scipy, scipy.*]\n  deny_modules: [scipy.io]\n",
            "p.yml",
        )
        .unwrap();
        let v = check_code(&strict, "from scipy import stats\n");
        assert_eq!(strict.preload_of(&v), ["scipy", "scipy.stats"]);
        assert!(!strict.allows_import("scipy.io"));
        // A policy that preloads nothing preloads nothing for known code.
        let off = Policy::from_yaml_str("sandbox:\n  preload: []\n", "p.yml").unwrap();
        assert!(off.preload_of(&check_code(&off, code)).is_empty());
    }

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
        assert_eq!(v.decision, crate::Decision::Deny);
        assert!(
            check_code(&Policy::default(), "import json\nx = (")
                .imports()
                .is_empty()
        );
        // `from a import b` may name a submodule: the candidates follow
        // each module, each once.
        assert_eq!(
            v.import_candidates(),
            [
                "pandas",
                "os.path",
                "matplotlib",
                "matplotlib.pyplot",
                "json",
                "numpy.linalg",
                "statistics",
                "socket"
            ]
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
