//! The patterns resolved names are matched against: the built-in families,
//! `code.deny_modules` and `code.deny_calls`, indexed by first segment.

use std::collections::HashMap;

use crate::config::Policy;
use crate::families::{FAMILIES, Family};

/// Where a pattern comes from.
#[derive(Debug, Clone, Copy)]
pub(super) enum Source {
    Family(&'static Family),
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
            .flat_map(|f| {
                f.patterns()
                    .map(move |p| (Source::Family(f), p.to_string()))
            })
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

/// Simple glob: `*` matches any run of characters (including dots).
fn glob_match(pattern: &str, text: &str) -> bool {
    let p = pattern.as_bytes();
    let t = text.as_bytes();
    let (mut pi, mut ti) = (0usize, 0usize);
    let (mut star, mut mark) = (usize::MAX, 0usize);
    while ti < t.len() {
        if pi < p.len() && p[pi] != b'*' && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = pi;
            mark = ti;
            pi += 1;
        } else if star != usize::MAX {
            pi = star + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// True when `name` is `pattern` or below it (`a.b` covers `a.b.c`), with
/// `*` globbing.
pub(super) fn covers(pattern: &str, name: &str) -> bool {
    let pattern = pattern.strip_suffix(".*").unwrap_or(pattern);
    if pattern.contains('*') {
        if glob_match(pattern, name) {
            return true;
        }
        // also cover members of a globbed name: `os.exec*` covers `os.execv.x`
        let mut end = name.len();
        while let Some(i) = name[..end].rfind('.') {
            if glob_match(pattern, &name[..i]) {
                return true;
            }
            end = i;
        }
        return false;
    }
    name == pattern
        || (name.len() > pattern.len()
            && name.starts_with(pattern)
            && name.as_bytes()[pattern.len()] == b'.')
}

/// True when an import allowlist pattern allows module `name`: `x` allows
/// exactly `x`; `x.*` allows `x` and everything below it.
pub fn allows(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix(".*") {
        Some(base) => covers(base, name),
        None => pattern == name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_coverage() {
        assert!(glob_match("os.exec*", "os.execv"));
        assert!(!glob_match("os.exec*", "os.path"));
        assert!(covers("os.exec*", "os.execv.__call__"));
        assert!(covers("subprocess", "subprocess.run"));
        assert!(!covers("subprocess", "subprocessx"));
        assert!(allows("pandas.*", "pandas"));
        assert!(allows("pandas.*", "pandas.api.types"));
        assert!(!allows("json", "json.decoder"));
        assert!(allows("json", "json"));
    }
}
