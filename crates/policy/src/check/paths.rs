//! Where a file path points: under the directories the code may write or
//! read, outside them, or unknown; and the suffixes of code files.

use ruff_python_ast::{self as ast, Expr, InterpolatedStringElement};

use super::resolve::MAX_RESOLVE_DEPTH;

/// File name endings of code Python would load.
pub(super) const CODE_SUFFIXES: &[&str] = &[".py", ".pyc", ".pyw", ".pth", ".so", ".pyd"];

/// Top-level directories the code may read from.
pub(super) const READ_DIRS: &[&str] = &["data", "tmp", "out"];

pub(super) enum PathVerdict {
    Inside,
    Outside,
    Unknown,
}

/// Decides a write path from its known text (`complete` = whole path known).
pub(super) fn path_verdict(p: &str, complete: bool) -> PathVerdict {
    dir_verdict(p, complete, &["out", "tmp"])
}

/// Decides whether a path (its known text; `complete` = whole path known)
/// stays under one of the top-level directories `dirs`.
pub(super) fn dir_verdict(p: &str, complete: bool, dirs: &[&str]) -> PathVerdict {
    let inside = |first: &str| dirs.contains(&first);
    if complete {
        let mut parts: Vec<&str> = Vec::new();
        if !p.starts_with('/') {
            return PathVerdict::Outside;
        }
        for c in p.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                c => parts.push(c),
            }
        }
        return match parts.first() {
            Some(first) if inside(first) => PathVerdict::Inside,
            _ => PathVerdict::Outside,
        };
    }
    if p.contains("..") {
        return PathVerdict::Unknown;
    }
    if let Some(rest) = p.strip_prefix('/') {
        // the first component is fully known when another '/' follows
        if let Some(first) = rest.split('/').next()
            && rest.contains('/')
        {
            return if inside(first) {
                PathVerdict::Inside
            } else {
                PathVerdict::Outside
            };
        }
        return PathVerdict::Unknown;
    }
    if p.is_empty() {
        PathVerdict::Unknown
    } else {
        PathVerdict::Outside
    }
}

/// True when any literal piece of a string expression contains `..`.
pub(super) fn has_dotdot(e: &Expr, depth: usize) -> bool {
    if depth > MAX_RESOLVE_DEPTH {
        return true;
    }
    match e {
        Expr::StringLiteral(s) => s.value.to_str().contains(".."),
        Expr::FString(f) => f.value.iter().any(|part| match part {
            ast::FStringPart::Literal(l) => l.value.contains(".."),
            ast::FStringPart::FString(fs) => fs.elements.literals().any(|l| l.value.contains("..")),
        }),
        Expr::BinOp(b) => has_dotdot(&b.left, depth + 1) || has_dotdot(&b.right, depth + 1),
        Expr::Call(c) => c.arguments.args.iter().any(|a| has_dotdot(a, depth + 1)),
        _ => false,
    }
}

/// The known end of a string expression (for file name suffixes).
pub(super) fn literal_suffix(e: &Expr) -> Option<String> {
    match e {
        Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
        Expr::FString(f) => match f.value.iter().last()? {
            ast::FStringPart::Literal(l) => Some(l.value.to_string()),
            ast::FStringPart::FString(fs) => match fs.elements.last()? {
                InterpolatedStringElement::Literal(l) => Some(l.value.to_string()),
                InterpolatedStringElement::Interpolation(_) => None,
            },
        },
        Expr::BinOp(b) if matches!(b.op, ast::Operator::Add) => literal_suffix(&b.right),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert!(matches!(
            path_verdict("/out/a.csv", true),
            PathVerdict::Inside
        ));
        assert!(matches!(
            path_verdict("/out/../etc/x", true),
            PathVerdict::Outside
        ));
        assert!(matches!(
            path_verdict("/outside/x", true),
            PathVerdict::Outside
        ));
        assert!(matches!(path_verdict("/out", false), PathVerdict::Unknown));
        assert!(matches!(path_verdict("/etc/", false), PathVerdict::Outside));
        assert!(matches!(
            path_verdict("rel.txt", true),
            PathVerdict::Outside
        ));
    }
}
