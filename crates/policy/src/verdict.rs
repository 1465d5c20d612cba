//! The outcome of checking code against a policy.

use serde::{Deserialize, Serialize};

/// What the policy decides about a piece of code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The code may run.
    Allow,
    /// The code must not run.
    Deny,
    /// A human must approve the code before it runs.
    Escalate,
}

/// How serious one finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Informational; does not change the decision.
    Info,
    /// Needs a human approval.
    Escalate,
    /// Blocks the run.
    Deny,
}

/// One thing the checker found, with where it is in the code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable rule id, e.g. `import-denied`, `dunder-escape`, `syntax-error`.
    pub rule: String,
    /// How serious it is.
    pub severity: Severity,
    /// What is wrong and what to do instead.
    pub message: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// The offending source line (trimmed, cut to a sensible length).
    pub snippet: String,
}

/// The decision and the findings behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Allow, deny or escalate.
    pub decision: Decision,
    /// Every finding, in source order.
    pub findings: Vec<Finding>,
    /// The modules the code imports, as the checker resolved them. Not part
    /// of reports (not serialized): a verdict read back has none.
    #[serde(skip)]
    imports: Vec<String>,
    /// `a.b` for each `from a import b` (not serialized either).
    #[serde(skip)]
    from_names: Vec<String>,
}

impl Verdict {
    /// Builds the verdict that the findings imply: any deny finding denies,
    /// else any escalate finding escalates, else allow.
    pub fn from_findings(findings: Vec<Finding>) -> Self {
        let decision = match findings.iter().map(|f| f.severity).max() {
            Some(Severity::Deny) => Decision::Deny,
            Some(Severity::Escalate) => Decision::Escalate,
            _ => Decision::Allow,
        };
        Verdict {
            decision,
            findings,
            imports: Vec::new(),
            from_names: Vec::new(),
        }
    }

    /// The same verdict, knowing the modules the code imports and the
    /// names it imports from them.
    pub(crate) fn with_imports(self, imports: Vec<String>, from_names: Vec<String>) -> Self {
        Verdict {
            imports,
            from_names,
            ..self
        }
    }

    /// The modules the code imports, as the checker resolved them, in
    /// source order, each once: `import a.b` gives `a.b`; `from a.b import
    /// c` gives `a.b` (or `a.b.c` where only that submodule is allowed, as
    /// it is checked); `__import__('m')` / `importlib.import_module('m')`
    /// with a constant name gives `m`. Denied modules are listed too;
    /// relative imports and `__future__` are not. Empty when the code did
    /// not parse.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// What the code may load, for a preload: [`Verdict::imports`] in
    /// source order, each followed by `a.b` for each `from a import b` —
    /// a submodule that `imports` names only by its package (`from scipy
    /// import stats` is `scipy.stats`, `from matplotlib import pyplot` is
    /// `matplotlib.pyplot`), or a name that is no module (`pandas.DataFrame`,
    /// which an import then does not find). Each once.
    pub fn import_candidates(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut add = |m: &String| {
            if !out.contains(m) {
                out.push(m.clone());
            }
        };
        for m in &self.imports {
            add(m);
            let below = format!("{m}.");
            for n in self.from_names.iter().filter(|n| n.starts_with(&below)) {
                add(n);
            }
        }
        for n in &self.from_names {
            add(n);
        }
        out
    }
}
