//! The patterns resolved names are matched against: the built-in families,
//! `code.deny_modules` and `code.deny_calls`, indexed by first segment.

use std::collections::HashMap;

use crate::policy::config::Policy;
use crate::policy::rules::{FAMILIES, RuleId, covers};

/// Where a pattern comes from.
#[derive(Debug, Clone, Copy)]
pub(super) enum Source {
    Family(RuleId),
    DenyModule,
    DenyCall,
}

/// Every family, denied-module and denied-call pattern (bare call names as
/// `builtins.x`), by first segment, in priority order: families first.
pub(super) struct Patterns {
    by_root: HashMap<String, Vec<(Source, String)>>,
    /// Patterns whose first segment is a glob.
    globbed: Vec<(Source, String)>,
}

impl Patterns {
    /// The patterns of the built-in families and of `policy`.
    pub(super) fn new(policy: &Policy) -> Self {
        let mut by_root: HashMap<String, Vec<(Source, String)>> = HashMap::new();
        let mut globbed = Vec::new();
        let all = FAMILIES
            .iter()
            .flat_map(|(rule, ps)| ps.iter().map(|p| (Source::Family(*rule), p.to_string())))
            .chain(
                policy
                    .code
                    .deny_modules
                    .iter()
                    .map(|p| (Source::DenyModule, p.clone())),
            )
            .chain(policy.code.deny_calls.iter().map(|p| {
                let p = if p.contains('.') {
                    p.clone()
                } else {
                    format!("builtins.{p}")
                };
                (Source::DenyCall, p)
            }));
        for (src, p) in all {
            let root = p.split('.').next().unwrap_or("").to_string();
            if root.contains('*') {
                globbed.push((src, p));
            } else {
                by_root.entry(root).or_default().push((src, p));
            }
        }
        Patterns { by_root, globbed }
    }

    /// The first pattern that covers the resolved dotted name `q`, and where
    /// it comes from.
    pub(super) fn find(&self, q: &str) -> Option<(Source, &str)> {
        let root = q.split('.').next().unwrap_or(q);
        self.by_root
            .get(root)
            .into_iter()
            .flatten()
            .chain(self.globbed.iter())
            .find(|(src, p)| {
                // `builtins.x` is how bare names resolve; `import builtins`
                // itself is caught at the import statement.
                !(matches!(src, Source::DenyModule) && q.starts_with("builtins.")) && covers(p, q)
            })
            .map(|(src, p)| (*src, p.as_str()))
    }
}
