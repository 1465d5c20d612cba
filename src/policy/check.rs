//! The static check: parse the code with ruff's Python parser and walk the
//! AST against the policy.
//!
//! This is a first gate that explains itself, not the security boundary:
//! the container (no network, read-only root, caps dropped, limits) is. The
//! check errs towards denying; what it cannot resolve statically (computed
//! attribute names, dynamic imports, passing `getattr` around) it denies.

use std::collections::{HashMap, HashSet};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{
    self as ast, Expr, ExprContext, InterpolatedStringElement, Pattern, PatternKeyword, Stmt,
};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::config::Policy;
use super::rules::{
    ATTRIBUTE_FUNCTIONS, DANGEROUS_ATTRIBUTES, FAMILIES, RuleId, SAFE_DUNDER_NAMES, SAFE_DUNDERS,
    allows, covers,
};
use super::verdict::{Finding, Severity, Verdict};

/// Statements and expressions nested deeper than this are not followed;
/// the code is denied as `too-complex`. CPython itself refuses more than 200
/// nested parentheses.
const MAX_NESTING: usize = 300;

/// CPython's limit on nested brackets.
const MAX_BRACKETS: usize = 200;

/// Resolution and constant folding follow at most this many levels.
const MAX_RESOLVE_DEPTH: usize = 32;
/// At most this many candidate names are kept per expression or variable.
const MAX_CANDIDATES: usize = 16;
/// Folded strings longer than this are not tracked.
const MAX_FOLDED_LEN: usize = 4096;

/// Builtins whose names are always treated as the builtin, even when the
/// code also binds the name (a later `del` or a branch not taken would
/// expose the builtin again).
const SENSITIVE_BUILTINS: &[&str] = &[
    "eval",
    "exec",
    "compile",
    "__import__",
    "globals",
    "locals",
    "vars",
    "breakpoint",
    "help",
    "getattr",
    "setattr",
    "delattr",
    "open",
    "__build_class__",
];

/// Methods that write a file named by their first argument.
const WRITER_METHODS: &[&str] = &[
    "to_csv",
    "to_json",
    "to_parquet",
    "to_excel",
    "to_html",
    "to_markdown",
    "to_latex",
    "to_feather",
    "to_hdf",
    "to_stata",
    "to_xml",
    "to_pickle",
    "to_orc",
    "savefig",
    "imsave",
    "save",
    "savez",
    "savez_compressed",
    "savetxt",
    "tofile",
    "write_text",
    "write_bytes",
];

/// matplotlib settings that name executables.
const RC_EXECUTABLE_KEYS: &[&str] = &["animation.ffmpeg_path", "animation.convert_path"];

/// File name endings of code Python would load.
const CODE_SUFFIXES: &[&str] = &[".py", ".pyc", ".pyw", ".pth", ".so", ".pyd"];

/// Functions (besides [`OPEN_FUNCTIONS`] and `pandas.read_*`) that read or
/// name a file by their first argument; a known path must be under `/data`,
/// `/tmp` or `/out`.
const READER_FUNCTIONS: &[&str] = &[
    "pathlib.Path",
    "pathlib.PurePath",
    "pathlib.PosixPath",
    "pathlib.PurePosixPath",
    "numpy.load",
    "numpy.loadtxt",
    "numpy.genfromtxt",
    "numpy.fromfile",
    "numpy.memmap",
    "matplotlib.pyplot.imread",
    "matplotlib.image.imread",
];

/// Top-level directories the code may read from.
const READ_DIRS: &[&str] = &["data", "tmp", "out"];

/// Functions that open files; checked for write modes.
const OPEN_FUNCTIONS: &[&str] = &["builtins.open", "io.open", "codecs.open", "io.FileIO"];

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
        return finish(policy, code, vec![f]);
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
    let findings = match result {
        Ok(f) => f,
        Err(msg) => {
            tracing::error!("policy check failed: {msg}");
            vec![raw(
                RuleId::InternalError,
                TextSize::new(0),
                format!("{msg}; the code is denied. Please report this with the code attached"),
            )]
        }
    };
    finish(policy, code, findings)
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

fn finish(policy: &Policy, code: &str, mut raws: Vec<RawFinding>) -> Verdict {
    raws.sort_by_key(|r| (r.offset, r.rule));
    let index = LineIndex::new(code);
    let mut seen = HashSet::new();
    let mut findings = Vec::new();
    for r in raws {
        if !seen.insert((r.rule, r.offset)) {
            continue;
        }
        let (line, column) = index.position(code, r.offset);
        let severity = if r.rule == RuleId::OpenWriteUnknownPath {
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
    Verdict::from_findings(findings)
}

/// Byte offsets of line starts; Python counts `\n`, `\r\n` and `\r`.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(code: &str) -> Self {
        let b = code.as_bytes();
        let mut starts = vec![0];
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\n' => starts.push(i + 1),
                b'\r' => {
                    if b.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    starts.push(i + 1);
                }
                _ => {}
            }
            i += 1;
        }
        LineIndex { starts }
    }

    /// 1-based line and 1-based column in characters.
    fn position(&self, code: &str, offset: TextSize) -> (u32, u32) {
        let off = (offset.to_usize()).min(code.len());
        let line = match self.starts.binary_search(&off) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.starts[line];
        let col = code.get(start..off).map(|s| s.chars().count()).unwrap_or(0);
        (line as u32 + 1, col as u32 + 1)
    }

    fn snippet(&self, code: &str, line: u32) -> String {
        let i = (line as usize).saturating_sub(1);
        let start = self.starts.get(i).copied().unwrap_or(0);
        let end = self.starts.get(i + 1).copied().unwrap_or(code.len());
        let text = code.get(start..end).unwrap_or("").trim();
        let mut out: String = text.chars().take(160).collect();
        if text.chars().count() > 160 {
            out.push('…');
        }
        out
    }
}

fn analyze(policy: &Policy, code: &str) -> Vec<RawFinding> {
    let mut findings = Vec::new();
    if let Some(i) = code.find('\0') {
        findings.push(raw(
            RuleId::SourceEncoding,
            TextSize::new(i as u32),
            "the code contains a NUL byte, which Python refuses; remove it".to_string(),
        ));
        return findings;
    }
    if let Some((off, enc)) = bad_coding_declaration(code) {
        findings.push(raw(
            RuleId::SourceEncoding,
            TextSize::new(off as u32),
            format!(
                "the code declares the source encoding `{enc}`; Python would decode it differently from what was checked. Remove the declaration (UTF-8 is the default)"
            ),
        ));
        return findings;
    }
    let parsed = match ruff_python_parser::parse_module(code) {
        Ok(p) => p,
        Err(e) => {
            findings.push(raw(
                RuleId::SyntaxError,
                e.location.start(),
                format!("syntax error: {}", e.error),
            ));
            return findings;
        }
    };
    // CPython refuses more than 200 nested brackets; the AST does not show
    // parentheses, so count them on the tokens.
    let mut level = 0usize;
    for t in parsed.tokens().iter() {
        use ruff_python_ast::token::TokenKind as K;
        match t.kind() {
            K::Lpar | K::Lsqb | K::Lbrace => {
                level += 1;
                if level > MAX_BRACKETS {
                    findings.push(raw(
                        RuleId::TooComplex,
                        t.start(),
                        format!(
                            "more than {MAX_BRACKETS} nested brackets, which Python itself refuses; split the expression into several statements"
                        ),
                    ));
                    return findings;
                }
            }
            K::Rpar | K::Rsqb | K::Rbrace => level = level.saturating_sub(1),
            _ => {}
        }
    }
    let module = parsed.syntax();
    let mut binder = Binder {
        bindings: HashMap::new(),
        consts: HashMap::new(),
        depth: 0,
    };
    // Two rounds so that names bound later in the file (functions, loops)
    // are known everywhere; the analysis is flow-insensitive on purpose.
    for _ in 0..2 {
        binder.visit_body(&module.body);
    }
    let mut patterns: HashMap<String, Vec<(Source, String)>> = HashMap::new();
    let mut glob_patterns = Vec::new();
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
            glob_patterns.push((src, p));
        } else {
            patterns.entry(root).or_default().push((src, p));
        }
    }
    let mut checker = Checker {
        policy,
        patterns,
        glob_patterns,
        env: Env {
            bindings: &binder.bindings,
            consts: &binder.consts,
        },
        findings,
        depth: 0,
        too_deep: false,
        callees: HashSet::new(),
    };
    checker.visit_body(&module.body);
    checker.findings
}

/// Finds a `# coding:` declaration in the first two lines that is not UTF-8
/// (or ASCII): the offset and the declared name.
fn bad_coding_declaration(code: &str) -> Option<(usize, String)> {
    let mut offset = 0;
    for line in code.split_inclusive('\n').take(2) {
        let t = line.trim_start_matches([' ', '\t', '\x0c', '\u{feff}']);
        if let Some(comment) = t.strip_prefix('#') {
            let mut rest = comment;
            while let Some(i) = rest.find("coding") {
                let after = &rest[i + 6..];
                if let Some(val) = after.strip_prefix([':', '=']) {
                    let name: String = val
                        .trim_start_matches([' ', '\t'])
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
                        .collect();
                    let norm = name.to_ascii_lowercase().replace('_', "-");
                    if !matches!(
                        norm.as_str(),
                        "utf-8" | "utf8" | "utf-8-sig" | "ascii" | "us-ascii"
                    ) {
                        return Some((offset, name));
                    }
                    break;
                }
                rest = after;
            }
        } else if !t.trim().is_empty() {
            break;
        }
        offset += line.len();
    }
    None
}

fn elts_of(e: &Expr) -> Option<&[Expr]> {
    match e {
        Expr::Tuple(t) => Some(&t.elts),
        Expr::List(l) => Some(&l.elts),
        _ => None,
    }
}

fn push_capped(v: &mut Vec<String>, s: String) {
    if v.len() < MAX_CANDIDATES && !v.contains(&s) {
        v.push(s);
    }
}

/// What names refer to, collected over the whole module.
struct Env<'b> {
    /// Name → dotted names it may refer to (`o` → `os`, `s` → `os.system`).
    bindings: &'b HashMap<String, Vec<String>>,
    /// Name → constant strings assigned to it.
    consts: &'b HashMap<String, Vec<String>>,
}

impl Env<'_> {
    /// Dotted names a bare name may refer to; unbound names are builtins.
    fn resolve_name(&self, id: &str) -> Vec<String> {
        let mut out = Vec::new();
        if id == "__builtins__" {
            out.push("builtins".to_string());
        }
        if let Some(b) = self.bindings.get(id) {
            for q in b {
                push_capped(&mut out, q.clone());
            }
            if SENSITIVE_BUILTINS.contains(&id) {
                push_capped(&mut out, format!("builtins.{id}"));
            }
        } else {
            push_capped(&mut out, format!("builtins.{id}"));
        }
        out
    }

    /// Dotted names `value.attr` may refer to.
    fn resolve_attr(&self, value: &Expr, attr: &str, depth: usize) -> Vec<String> {
        let mut out = Vec::new();
        for q in self.resolve(value, depth + 1) {
            push_capped(&mut out, format!("{q}.{attr}"));
        }
        out
    }

    /// Dotted names `expr` may evaluate to (modules, functions), best effort.
    fn resolve(&self, expr: &Expr, depth: usize) -> Vec<String> {
        let mut out = Vec::new();
        if depth > MAX_RESOLVE_DEPTH {
            return out;
        }
        match expr {
            Expr::Name(n) => out = self.resolve_name(n.id.as_str()),
            Expr::Attribute(a) => out = self.resolve_attr(&a.value, a.attr.id.as_str(), depth),
            Expr::Call(c) => {
                let funcs = self.resolve(&c.func, depth + 1);
                let args = &c.arguments.args;
                if funcs.iter().any(|f| f == "builtins.getattr") && args.len() >= 2 {
                    if let Some(name) = self.fold(&args[1], depth + 1) {
                        for q in self.resolve(&args[0], depth + 1) {
                            push_capped(&mut out, format!("{q}.{name}"));
                        }
                    }
                } else if funcs.iter().any(|f| {
                    f == "builtins.__import__"
                        || f == "importlib.import_module"
                        || f == "importlib.__import__"
                }) && let Some(first) = args.first()
                    && let Some(m) = self.fold(first, depth + 1)
                {
                    push_capped(&mut out, m.clone());
                    if let Some(top) = m.split('.').next() {
                        push_capped(&mut out, top.to_string());
                    }
                }
            }
            Expr::Subscript(s) => match &*s.value {
                Expr::List(ast::ExprList { elts, .. })
                | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                    for e in elts {
                        for q in self.resolve(e, depth + 1) {
                            push_capped(&mut out, q);
                        }
                    }
                }
                other => {
                    let base = self.resolve(other, depth + 1);
                    if base.iter().any(|b| b == "sys.modules")
                        && let Some(m) = self.fold(&s.slice, depth + 1)
                    {
                        push_capped(&mut out, m);
                    }
                }
            },
            Expr::Named(n) => out = self.resolve(&n.value, depth + 1),
            Expr::If(i) => {
                for e in [&*i.body, &*i.orelse] {
                    for q in self.resolve(e, depth + 1) {
                        push_capped(&mut out, q);
                    }
                }
            }
            Expr::BoolOp(b) => {
                for e in &b.values {
                    for q in self.resolve(e, depth + 1) {
                        push_capped(&mut out, q);
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// The constant string `expr` evaluates to, when it is built from
    /// literals (`'sys' + 'tem'`, `''.join(['a', 'b'])`, `'x'[::-1]`,
    /// `chr(115)`, f-strings of constants, names assigned one constant).
    fn fold(&self, expr: &Expr, depth: usize) -> Option<String> {
        if depth > MAX_RESOLVE_DEPTH {
            return None;
        }
        let s = match expr {
            Expr::StringLiteral(s) => s.value.to_str().to_string(),
            Expr::BinOp(b) if matches!(b.op, ast::Operator::Add) => {
                let mut l = self.fold(&b.left, depth + 1)?;
                l.push_str(&self.fold(&b.right, depth + 1)?);
                l
            }
            Expr::FString(f) => {
                let mut out = String::new();
                for part in f.value.iter() {
                    match part {
                        ast::FStringPart::Literal(l) => out.push_str(&l.value),
                        ast::FStringPart::FString(fs) => {
                            for el in fs.elements.iter() {
                                match el {
                                    InterpolatedStringElement::Literal(l) => out.push_str(&l.value),
                                    InterpolatedStringElement::Interpolation(i) => {
                                        if i.format_spec.is_some() {
                                            return None;
                                        }
                                        out.push_str(&self.fold(&i.expression, depth + 1)?)
                                    }
                                }
                                if out.len() > MAX_FOLDED_LEN {
                                    return None;
                                }
                            }
                        }
                    }
                }
                out
            }
            Expr::Call(c) => {
                let args = &c.arguments.args;
                if let Expr::Attribute(a) = &*c.func
                    && a.attr.id.as_str() == "join"
                    && args.len() == 1
                {
                    let sep = self.fold(&a.value, depth + 1)?;
                    let elts = match &args[0] {
                        Expr::List(l) => &l.elts,
                        Expr::Tuple(t) => &t.elts,
                        _ => return None,
                    };
                    let mut parts = Vec::new();
                    for e in elts {
                        parts.push(self.fold(e, depth + 1)?);
                    }
                    parts.join(&sep)
                } else if let Expr::Name(n) = &*c.func
                    && n.id.as_str() == "chr"
                    && args.len() == 1
                    && let Expr::NumberLiteral(num) = &args[0]
                    && let ast::Number::Int(i) = &num.value
                {
                    char::from_u32(u32::try_from(i.as_i64()?).ok()?)?.to_string()
                } else if let Expr::Attribute(a) = &*c.func
                    && matches!(a.attr.id.as_str(), "lower" | "upper" | "strip")
                    && args.is_empty()
                {
                    let v = self.fold(&a.value, depth + 1)?;
                    match a.attr.id.as_str() {
                        "lower" => v.to_lowercase(),
                        "upper" => v.to_uppercase(),
                        _ => v.trim().to_string(),
                    }
                } else {
                    return None;
                }
            }
            Expr::Subscript(s) => {
                let v = self.fold(&s.value, depth + 1)?;
                match &*s.slice {
                    Expr::Slice(sl)
                        if sl.lower.is_none()
                            && sl.upper.is_none()
                            && matches!(sl.step.as_deref(), Some(Expr::UnaryOp(u)) if matches!(u.op, ast::UnaryOp::USub)) =>
                    {
                        v.chars().rev().collect()
                    }
                    _ => return None,
                }
            }
            Expr::Name(n) => {
                let c = self.consts.get(n.id.as_str())?;
                if c.len() == 1 {
                    c[0].clone()
                } else {
                    return None;
                }
            }
            _ => return None,
        };
        (s.len() <= MAX_FOLDED_LEN).then_some(s)
    }

    /// The known beginning of a string (for paths built as `f"/out/{x}"`,
    /// `"/out/" + name`, `os.path.join("/out", name)`); `complete` tells
    /// whether it is the whole string.
    fn prefix(&self, expr: &Expr, depth: usize) -> Option<(String, bool)> {
        if let Some(s) = self.fold(expr, depth) {
            return Some((s, true));
        }
        if depth > MAX_RESOLVE_DEPTH {
            return None;
        }
        match expr {
            Expr::BinOp(b) if matches!(b.op, ast::Operator::Add) => {
                let (l, complete) = self.prefix(&b.left, depth + 1)?;
                if complete {
                    match self.prefix(&b.right, depth + 1) {
                        Some((r, c)) => Some((l + &r, c)),
                        None => Some((l, false)),
                    }
                } else {
                    Some((l, false))
                }
            }
            Expr::FString(f) => {
                let mut out = String::new();
                for part in f.value.iter() {
                    match part {
                        ast::FStringPart::Literal(l) => out.push_str(&l.value),
                        ast::FStringPart::FString(fs) => {
                            for el in fs.elements.iter() {
                                match el {
                                    InterpolatedStringElement::Literal(l) => out.push_str(&l.value),
                                    InterpolatedStringElement::Interpolation(i) => {
                                        match (&i.format_spec, self.fold(&i.expression, depth + 1))
                                        {
                                            (None, Some(v)) => out.push_str(&v),
                                            _ => return Some((out, false)),
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                Some((out, true))
            }
            Expr::Call(c) => {
                let funcs = self.resolve(&c.func, depth + 1);
                if funcs
                    .iter()
                    .any(|f| f == "os.path.join" || f == "posixpath.join")
                    && let Some(first) = c.arguments.args.first()
                {
                    let (p, complete) = self.prefix(first, depth + 1)?;
                    if complete {
                        return Some((format!("{}/", p.trim_end_matches('/')), false));
                    }
                    return Some((p, false));
                }
                None
            }
            _ => None,
        }
    }
}

/// Pass 1: what each name may refer to.
struct Binder {
    bindings: HashMap<String, Vec<String>>,
    consts: HashMap<String, Vec<String>>,
    depth: usize,
}

impl Binder {
    fn bind_value(&mut self, target: &Expr, value: &Expr) {
        match (target, value) {
            (Expr::Name(n), v) => {
                let (qs, cs) = {
                    let env = Env {
                        bindings: &self.bindings,
                        consts: &self.consts,
                    };
                    (env.resolve(v, 0), env.fold(v, 0))
                };
                let id = n.id.to_string();
                if !qs.is_empty() {
                    let e = self.bindings.entry(id.clone()).or_default();
                    for q in qs {
                        push_capped(e, q);
                    }
                } else {
                    // Bound to something else: the name no longer defaults
                    // to the builtin of the same name.
                    self.bindings.entry(id.clone()).or_default();
                }
                if let Some(c) = cs {
                    push_capped(self.consts.entry(id).or_default(), c);
                } else {
                    // not a constant: make the name ambiguous
                    let e = self.consts.entry(id).or_default();
                    push_capped(e, String::new());
                    push_capped(e, "\u{0}".to_string());
                }
            }
            (Expr::Tuple(_) | Expr::List(_), v) => match (elts_of(target), elts_of(v)) {
                (Some(ts), Some(vs)) if ts.len() == vs.len() => {
                    for (t, v) in ts.iter().zip(vs.iter()) {
                        self.bind_value(t, v);
                    }
                }
                _ => self.bind_opaque(target),
            },
            _ => self.bind_opaque(target),
        }
    }

    fn bind_opaque(&mut self, target: &Expr) {
        match target {
            Expr::Name(n) => {
                self.bindings.entry(n.id.to_string()).or_default();
                let e = self.consts.entry(n.id.to_string()).or_default();
                push_capped(e, String::new());
                push_capped(e, "\u{0}".to_string());
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bind_opaque(e)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.bind_opaque(e)),
            Expr::Starred(s) => self.bind_opaque(&s.value),
            _ => {}
        }
    }

    /// `for x in [a, b]` binds `x` to whatever `a` and `b` are.
    fn bind_iter(&mut self, target: &Expr, iter: &Expr) {
        let elts = match iter {
            Expr::List(l) => Some(&l.elts),
            Expr::Tuple(t) => Some(&t.elts),
            Expr::Set(s) => Some(&s.elts),
            _ => None,
        };
        match elts {
            Some(elts) => {
                for e in elts {
                    self.bind_value(target, e);
                }
            }
            None => self.bind_opaque(target),
        }
    }

    fn bind(&mut self, name: &str, qualified: String) {
        push_capped(
            self.bindings.entry(name.to_string()).or_default(),
            qualified,
        );
    }

    fn bind_parameters(&mut self, params: &ast::Parameters) {
        for p in params.iter_non_variadic_params() {
            if let Some(d) = &p.default {
                let target = Expr::Name(ast::ExprName {
                    node_index: Default::default(),
                    range: p.parameter.name.range,
                    id: p.parameter.name.id.clone(),
                    ctx: ExprContext::Store,
                });
                self.bind_value(&target, d);
            } else {
                self.bindings
                    .entry(p.parameter.name.id.to_string())
                    .or_default();
            }
        }
    }
}

impl<'a> Visitor<'a> for Binder {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.depth > MAX_NESTING {
            return;
        }
        self.depth += 1;
        match stmt {
            Stmt::Import(i) => {
                for a in &i.names {
                    let full = a.name.id.as_str();
                    match &a.asname {
                        Some(asn) => self.bind(asn.id.as_str(), full.to_string()),
                        None => {
                            let top = full.split('.').next().unwrap_or(full);
                            self.bind(top, top.to_string());
                        }
                    }
                }
            }
            Stmt::ImportFrom(i) if i.level == 0 => {
                let m = i.module.as_ref().map(|m| m.id.as_str()).unwrap_or("");
                for a in &i.names {
                    let n = a.name.id.as_str();
                    if n == "*" {
                        continue;
                    }
                    let local = a.asname.as_ref().map(|x| x.id.as_str()).unwrap_or(n);
                    self.bind(local, format!("{m}.{n}"));
                }
            }
            Stmt::Assign(a) => {
                for t in &a.targets {
                    self.bind_value(t, &a.value);
                }
            }
            Stmt::AnnAssign(a) => match &a.value {
                Some(v) => self.bind_value(&a.target, v),
                None => self.bind_opaque(&a.target),
            },
            Stmt::AugAssign(a) => self.bind_opaque(&a.target),
            Stmt::For(f) => self.bind_iter(&f.target, &f.iter),
            Stmt::With(w) => {
                for item in &w.items {
                    if let Some(v) = &item.optional_vars {
                        self.bind_opaque(v);
                    }
                }
            }
            Stmt::FunctionDef(f) => {
                self.bindings.entry(f.name.id.to_string()).or_default();
                self.bind_parameters(&f.parameters);
            }
            Stmt::ClassDef(c) => {
                self.bindings.entry(c.name.id.to_string()).or_default();
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
        self.depth -= 1;
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.depth > MAX_NESTING {
            return;
        }
        self.depth += 1;
        match expr {
            Expr::Named(n) => self.bind_value(&n.target, &n.value),
            Expr::Lambda(l) => {
                if let Some(p) = &l.parameters {
                    self.bind_parameters(p);
                }
            }
            Expr::ListComp(ast::ExprListComp { generators, .. })
            | Expr::SetComp(ast::ExprSetComp { generators, .. })
            | Expr::DictComp(ast::ExprDictComp { generators, .. })
            | Expr::Generator(ast::ExprGenerator { generators, .. }) => {
                for g in generators {
                    self.bind_iter(&g.target, &g.iter);
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        if self.depth > MAX_NESTING {
            return;
        }
        self.depth += 1;
        visitor::walk_pattern(self, pattern);
        self.depth -= 1;
    }
}

/// Where a pattern comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    Family(RuleId),
    DenyModule,
    DenyCall,
}

/// Pass 2: findings.
struct Checker<'p, 'b> {
    policy: &'p Policy,
    /// Every family, denied-module and denied-call pattern (bare call names
    /// as `builtins.x`), by first segment, in priority order.
    patterns: HashMap<String, Vec<(Source, String)>>,
    /// Patterns whose first segment is a glob.
    glob_patterns: Vec<(Source, String)>,
    env: Env<'b>,
    findings: Vec<RawFinding>,
    depth: usize,
    too_deep: bool,
    /// Ranges of expressions that are the function of a call.
    callees: HashSet<TextRange>,
}

impl Checker<'_, '_> {
    fn report(&mut self, rule: RuleId, offset: TextSize, message: String) {
        self.findings.push(raw(rule, offset, message));
    }

    fn enter(&mut self, offset: TextSize) -> bool {
        if self.depth >= MAX_NESTING {
            if !self.too_deep {
                self.too_deep = true;
                self.report(
                    RuleId::TooComplex,
                    offset,
                    format!(
                        "the code nests deeper than {MAX_NESTING} levels, more than the checker follows; split the expression into several statements"
                    ),
                );
            }
            return false;
        }
        self.depth += 1;
        true
    }

    /// Checks one resolved dotted name against the built-in families, the
    /// denied modules and the denied calls. Returns true when it reported.
    fn check_qualified(&mut self, q: &str, offset: TextSize) -> bool {
        let root = q.split('.').next().unwrap_or(q);
        let hit = self
            .patterns
            .get(root)
            .into_iter()
            .flatten()
            .chain(self.glob_patterns.iter())
            .find(|(src, p)| {
                // `builtins.x` is how bare names resolve; `import builtins`
                // itself is caught at the import statement.
                !(matches!(src, Source::DenyModule) && q.starts_with("builtins.")) && covers(p, q)
            })
            .cloned();
        let Some((src, p)) = hit else {
            return false;
        };
        let shown = q.strip_prefix("builtins.").unwrap_or(q);
        match src {
            Source::Family(rule) => {
                let what = family_description(rule);
                self.report(
                    rule,
                    offset,
                    format!("`{shown}` is denied: {what} (matches built-in rule `{p}`)"),
                );
            }
            Source::DenyModule => {
                let msg = if q == p.trim_end_matches(".*") {
                    format!(
                        "module `{q}` is denied by the policy (code.deny_modules); use an allowed module instead"
                    )
                } else {
                    format!(
                        "`{q}` belongs to module `{p}`, which the policy denies (code.deny_modules); use an allowed module instead"
                    )
                };
                self.report(RuleId::ImportDenied, offset, msg);
            }
            Source::DenyCall => {
                self.report(
                    RuleId::CallDenied,
                    offset,
                    format!(
                        "`{shown}` is denied by the policy (code.deny_calls: `{}`)",
                        p.strip_prefix("builtins.").unwrap_or(&p)
                    ),
                );
            }
        }
        true
    }

    /// Checks a module being imported (statement, `__import__('x')`).
    fn check_import(&mut self, module: &str, offset: TextSize, also_allowed_as: Option<&str>) {
        if module == "__future__" {
            return;
        }
        if self.check_qualified(module, offset) {
            return;
        }
        let allowed = self
            .policy
            .code
            .allow_imports
            .iter()
            .any(|p| allows(p, module) || also_allowed_as.is_some_and(|m| allows(p, m)));
        if !allowed {
            let msg = if self.policy.code.escalates(RuleId::ImportNotAllowed) {
                format!(
                    "module `{module}` is not in the policy's allowlist (code.allow_imports); a human approver must accept it before it runs"
                )
            } else {
                let some: Vec<&str> = self
                    .policy
                    .code
                    .allow_imports
                    .iter()
                    .take(8)
                    .map(String::as_str)
                    .collect();
                format!(
                    "module `{module}` is not in the policy's allowlist (code.allow_imports); use an allowed module ({}{}) or ask for the policy to be extended",
                    some.join(", "),
                    if self.policy.code.allow_imports.len() > 8 {
                        ", ..."
                    } else {
                        ""
                    }
                )
            };
            self.report(RuleId::ImportNotAllowed, offset, msg);
        }
    }

    fn check_import_stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::Import(i) => {
                for a in &i.names {
                    self.check_import(a.name.id.as_str(), a.range.start(), None);
                }
            }
            Stmt::ImportFrom(i) => {
                if i.level > 0 {
                    self.report(
                        RuleId::RelativeImport,
                        i.range.start(),
                        "relative imports have no package to import from: the code runs as a single script; import modules by their full name".to_string(),
                    );
                    return;
                }
                let m = i.module.as_ref().map(|m| m.id.as_str()).unwrap_or("");
                if m == "__future__" {
                    return;
                }
                // The module itself: allowed, or at least one imported name
                // is an allowed submodule (`from concurrent import futures`).
                let allow = &self.policy.code.allow_imports;
                let module_ok = allow.iter().any(|p| allows(p, m));
                let some_sub_ok = i.names.iter().any(|a| {
                    let full = format!("{m}.{}", a.name.id.as_str());
                    allow.iter().any(|p| allows(p, &full))
                });
                if module_ok || !some_sub_ok {
                    self.check_import(m, i.range.start(), None);
                } else if self.check_qualified(m, i.range.start()) {
                    return;
                }
                for a in &i.names {
                    let n = a.name.id.as_str();
                    if n == "*" {
                        let risky = FAMILIES
                            .iter()
                            .flat_map(|(_, ps)| ps.iter().copied())
                            .chain(self.policy.code.deny_calls.iter().map(String::as_str))
                            .any(|p| p.starts_with(&format!("{m}.")));
                        if risky {
                            self.report(
                                RuleId::StarImport,
                                a.range.start(),
                                format!(
                                    "`from {m} import *` would bring denied functions in under bare names; import the names you need"
                                ),
                            );
                        }
                        continue;
                    }
                    let full = format!("{m}.{n}");
                    if self.check_qualified(&full, a.range.start()) {
                        continue;
                    }
                    if !module_ok && some_sub_ok {
                        self.check_import(&full, a.range.start(), Some(m));
                    }
                    self.check_attr_name(n, a.range.start(), false);
                }
            }
            _ => {}
        }
    }

    /// Checks an attribute name (from `x.name`, `getattr(x, 'name')`,
    /// a match class pattern). `resolved` tells whether the receiver's
    /// dotted name was already checked and reported.
    fn check_attr_name(&mut self, name: &str, offset: TextSize, resolved: bool) {
        if is_dunder(name) {
            if !SAFE_DUNDERS.contains(&name) {
                self.report(
                    RuleId::DunderEscape,
                    offset,
                    format!(
                        "attribute `{name}` reaches interpreter internals (the classic sandbox escape through class walks and globals); data-analysis code does not need it"
                    ),
                );
            }
            return;
        }
        if !resolved && DANGEROUS_ATTRIBUTES.contains(&name) {
            self.report(
                RuleId::DangerousAttribute,
                offset,
                format!(
                    "attribute `.{name}` is denied on any object: it names a process, import, frame or module handle, and the object it is taken from cannot always be known statically"
                ),
            );
        }
    }

    fn check_name(&mut self, n: &ast::ExprName) {
        let id = n.id.as_str();
        let offset = n.range.start();
        let is_callee = self.callees.contains(&n.range);
        let mut reported = false;
        if matches!(n.ctx, ExprContext::Load | ExprContext::Del) && id != "__builtins__" {
            for q in self.env.resolve_name(id) {
                reported |= self.check_qualified(&q, offset);
                if !is_callee && ATTRIBUTE_FUNCTIONS.contains(&q.as_str()) {
                    self.report_attr_function_value(&q, offset);
                    reported = true;
                }
            }
        }
        if !reported && is_dunder(id) && !SAFE_DUNDER_NAMES.contains(&id) {
            self.report(
                RuleId::DunderEscape,
                offset,
                format!(
                    "name `{id}` reaches interpreter internals; data-analysis code does not need it"
                ),
            );
        }
    }

    fn report_attr_function_value(&mut self, q: &str, offset: TextSize) {
        let shown = q.strip_prefix("builtins.").unwrap_or(q);
        self.report(
            RuleId::DynamicAttribute,
            offset,
            format!(
                "`{shown}` is used as a value, so the attribute names it will reach cannot be checked; call it directly with a literal name, or access the attribute directly"
            ),
        );
    }

    fn check_attribute(&mut self, a: &ast::ExprAttribute) {
        let offset = a.attr.range.start();
        let mut reported = false;
        let is_callee = self.callees.contains(&a.range);
        for q in self.env.resolve_attr(&a.value, a.attr.id.as_str(), 0) {
            reported |= self.check_qualified(&q, a.range.start());
            if !is_callee && ATTRIBUTE_FUNCTIONS.contains(&q.as_str()) {
                self.report_attr_function_value(&q, offset);
                reported = true;
            }
        }
        self.check_attr_name(a.attr.id.as_str(), offset, reported);
    }

    fn check_call(&mut self, c: &ast::ExprCall) {
        self.callees.insert(c.func.range());
        let funcs = self.env.resolve(&c.func, 0);
        let args = &c.arguments.args;
        let has = |name: &str| funcs.iter().any(|f| f == name);
        let starred = args.iter().any(|a| matches!(a, Expr::Starred(_)));

        if has("builtins.getattr") || has("builtins.setattr") || has("builtins.delattr") {
            match args.get(1).filter(|_| !starred) {
                Some(name_expr) => match self.env.fold(name_expr, 0) {
                    Some(name) => {
                        let mut reported = false;
                        for q in self.env.resolve(&args[0], 0) {
                            reported |=
                                self.check_qualified(&format!("{q}.{name}"), name_expr.start());
                        }
                        self.check_attr_name(&name, name_expr.start(), reported);
                    }
                    None => self.report(
                        RuleId::DynamicAttribute,
                        name_expr.start(),
                        "the attribute name is computed, so the checker cannot see what it reaches; write the attribute directly (`obj.name`) or use a literal name".to_string(),
                    ),
                },
                None => self.report(
                    RuleId::DynamicAttribute,
                    c.start(),
                    "getattr/setattr/delattr without a literal attribute name cannot be checked; access the attribute directly".to_string(),
                ),
            }
        }
        if has("operator.attrgetter") || has("operator.methodcaller") {
            let names: &[Expr] = if has("operator.methodcaller") {
                args.get(..1).unwrap_or(&[])
            } else {
                args
            };
            if names.is_empty() || starred {
                self.report(
                    RuleId::DynamicAttribute,
                    c.start(),
                    "attrgetter/methodcaller without literal names cannot be checked; access the attribute directly".to_string(),
                );
            }
            for n in names {
                match self.env.fold(n, 0) {
                    Some(s) => {
                        for part in s.split('.') {
                            self.check_attr_name(part, n.start(), false);
                        }
                    }
                    None => self.report(
                        RuleId::DynamicAttribute,
                        n.start(),
                        "the attribute name is computed, so the checker cannot see what it reaches; use a literal name".to_string(),
                    ),
                }
            }
        }
        if (has("builtins.__import__")
            || has("importlib.import_module")
            || has("importlib.__import__"))
            && let Some(first) = args.first()
            && let Some(m) = self.env.fold(first, 0)
        {
            self.check_import(&m, first.start(), None);
        }
        if OPEN_FUNCTIONS.iter().any(|f| has(f)) {
            self.check_open(c);
        } else if let Some(f) = funcs
            .iter()
            .find(|f| READER_FUNCTIONS.contains(&f.as_str()) || f.starts_with("pandas.read_"))
            && let Some(path) = c.arguments.args.first().filter(|_| !starred)
        {
            let what = f.rsplit('.').next().unwrap_or(f).to_string();
            self.check_read(path, &what);
        }
        let pickle = c.arguments.keywords.iter().find(|k| {
            k.arg
                .as_ref()
                .is_some_and(|a| a.id.as_str() == "allow_pickle")
        });
        if let Some(k) = pickle
            && !matches!(&k.value, Expr::BooleanLiteral(b) if !b.value)
        {
            self.report(
                RuleId::UnsafeDeserialization,
                k.start(),
                "`allow_pickle=True` lets the file run arbitrary code when loaded; save arrays with numpy.save and load them without allow_pickle".to_string(),
            );
        }
        if let Expr::Attribute(a) = &*c.func {
            let method = a.attr.id.as_str();
            if WRITER_METHODS.contains(&method) {
                self.check_writer(c, method);
            }
            if matches!(method, "query" | "eval") {
                self.check_query(c, method);
            }
        }
    }

    /// `df.to_csv(path)`, `fig.savefig(path)`, `np.save(path, a)`: a literal
    /// path must be under /out or /tmp.
    fn check_writer(&mut self, c: &ast::ExprCall, method: &str) {
        let path = c.arguments.args.first().or_else(|| {
            c.arguments
                .keywords
                .iter()
                .find(|k| {
                    k.arg.as_ref().is_some_and(|a| {
                        matches!(
                            a.id.as_str(),
                            "path_or_buf" | "path" | "fname" | "file" | "excel_writer"
                        )
                    })
                })
                .map(|k| &k.value)
        });
        let Some(path) = path else { return };
        self.check_code_file(path);
        if let Some((p, complete)) = self.env.prefix(path, 0)
            && matches!(path_verdict(&p, complete), PathVerdict::Outside)
        {
            self.report(
                RuleId::OpenWriteOutsideOutput,
                path.start(),
                format!(
                    "`.{method}(...)` writes to `{p}{}`, outside the output directory; write results under `/out/` (collected as artifacts) or scratch files under `/tmp/`",
                    if complete { "" } else { "…" }
                ),
            );
        }
    }

    /// pandas `query`/`eval` evaluate expression strings; `@name` reaches
    /// Python variables, so only literal strings without `@` are accepted.
    fn check_query(&mut self, c: &ast::ExprCall, method: &str) {
        let Some(expr) = c.arguments.args.first().or_else(|| {
            c.arguments
                .keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == "expr"))
                .map(|k| &k.value)
        }) else {
            return;
        };
        let literal_text = match expr {
            Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
            Expr::FString(f) => {
                let mut out = String::new();
                for part in f.value.iter() {
                    match part {
                        ast::FStringPart::Literal(l) => out.push_str(&l.value),
                        ast::FStringPart::FString(fs) => {
                            for l in fs.elements.literals() {
                                out.push_str(&l.value);
                            }
                        }
                    }
                }
                Some(out)
            }
            _ => self.env.fold(expr, 0),
        };
        match literal_text {
            Some(t) if !t.contains('@') && !t.contains("__") => {}
            Some(_) => self.report(
                RuleId::EvalExec,
                expr.start(),
                format!(
                    "`.{method}()` with `@name` evaluates Python objects inside the expression string; filter with boolean indexing (`df[df.a > x]`) instead"
                ),
            ),
            None => self.report(
                RuleId::EvalExec,
                expr.start(),
                format!(
                    "`.{method}()` evaluates an expression string the checker cannot see; write the expression as a literal string or use boolean indexing"
                ),
            ),
        }
    }

    /// Writing `.py`/`.pth`/`.pyc`/`.so` files creates code the check never saw.
    fn check_code_file(&mut self, path: &Expr) {
        if let Some(sfx) = literal_suffix(path)
            && CODE_SUFFIXES
                .iter()
                .any(|c| sfx.to_ascii_lowercase().ends_with(c))
        {
            self.report(
                RuleId::CodeFileWrite,
                path.start(),
                "writes a Python module or extension file; code written at run time is never checked. Write data files (CSV, JSON, PNG) instead".to_string(),
            );
        }
    }

    fn check_open(&mut self, c: &ast::ExprCall) {
        let kw = |name: &str| {
            c.arguments
                .keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == name))
                .map(|k| &k.value)
        };
        let args = &c.arguments.args;
        let Some(path) = args.first().or_else(|| kw("file")) else {
            return;
        };
        let mode = args.get(1).or_else(|| kw("mode"));
        let writes = match mode {
            None => false,
            Some(m) => match self.env.fold(m, 0) {
                Some(s) => s.contains(['w', 'a', 'x', '+']),
                None => true,
            },
        };
        if !writes {
            self.check_read(path, "open");
            return;
        }
        self.check_code_file(path);
        match self.env.prefix(path, 0) {
            // `f"/out/{x}/../../etc"`: the known prefix says nothing
            Some((_, false)) if has_dotdot(path, 0) => self.report_unknown_open(path.start()),
            Some((p, complete)) => match path_verdict(&p, complete) {
                PathVerdict::Inside => {}
                PathVerdict::Outside => self.report(
                    RuleId::OpenWriteOutsideOutput,
                    path.start(),
                    format!(
                        "writes to `{p}{}`, outside the output directory; write results under `/out/` (collected as artifacts) or scratch files under `/tmp/`",
                        if complete { "" } else { "…" }
                    ),
                ),
                PathVerdict::Unknown => self.report_unknown_open(path.start()),
            },
            None => self.report_unknown_open(path.start()),
        }
    }

    /// A known path read outside `/data`, `/tmp` and `/out` is denied; an
    /// unknown one is left to the sandbox (runtime rules and the container).
    fn check_read(&mut self, path: &Expr, what: &str) {
        let Some((p, complete)) = self.env.prefix(path, 0) else {
            return;
        };
        if !complete && has_dotdot(path, 0) {
            return;
        }
        // The code runs in /tmp: a relative path is read from there.
        let absolute = if p.starts_with('/') {
            p.clone()
        } else if complete || !p.is_empty() {
            format!("/tmp/{p}")
        } else {
            return;
        };
        if matches!(
            dir_verdict(&absolute, complete, READ_DIRS),
            PathVerdict::Outside
        ) {
            self.report(
                RuleId::OpenReadOutside,
                path.start(),
                format!(
                    "`{what}(...)` reads `{p}{}`, outside the sandbox's data directories; the code may read its inputs under `/data/` and its own files under `/tmp/` and `/out/`. Pass the file as an input instead (`--input`, `inputs=`)",
                    if complete { "" } else { "…" }
                ),
            );
        }
    }

    fn report_unknown_open(&mut self, offset: TextSize) {
        self.report(
            RuleId::OpenWriteUnknownPath,
            offset,
            "opens a file for writing at a path the checker cannot determine; the sandbox only lets the code write under /out and /tmp".to_string(),
        );
    }

    /// String annotations are evaluated by `typing.get_type_hints` (and so
    /// by `functools.singledispatch.register`): a call inside one runs code.
    fn check_annotation_strings(&mut self, expr: &Expr, depth: usize) {
        if depth > 16 {
            return;
        }
        match expr {
            Expr::StringLiteral(s) => {
                if let Ok(parsed) = ruff_python_parser::parse_expression(s.value.to_str())
                    && annotation_has_code(&parsed.syntax().body, 0)
                {
                    self.report(
                        RuleId::EvalExec,
                        s.start(),
                        "this string annotation contains code (a call or similar); typing.get_type_hints and singledispatch evaluate string annotations, so write a plain type such as `\"pd.DataFrame\"`".to_string(),
                    );
                }
            }
            Expr::Subscript(sub) => {
                self.check_annotation_strings(&sub.value, depth + 1);
                self.check_annotation_strings(&sub.slice, depth + 1);
            }
            Expr::Tuple(t) => t
                .elts
                .iter()
                .for_each(|e| self.check_annotation_strings(e, depth + 1)),
            Expr::List(l) => l
                .elts
                .iter()
                .for_each(|e| self.check_annotation_strings(e, depth + 1)),
            Expr::BinOp(b) => {
                self.check_annotation_strings(&b.left, depth + 1);
                self.check_annotation_strings(&b.right, depth + 1);
            }
            _ => {}
        }
    }

    fn scan_string(&mut self, text: &str, offset: TextSize) {
        if RC_EXECUTABLE_KEYS.iter().any(|k| text.contains(k)) {
            self.report(
                RuleId::Process,
                offset,
                "this string names a matplotlib setting that points at an executable; leave the sandbox's defaults alone".to_string(),
            );
        }
        for name in dunders_in(text) {
            if !SAFE_DUNDERS.contains(&name) && !SAFE_DUNDER_NAMES.contains(&name) {
                self.report(
                    RuleId::DunderEscape,
                    offset,
                    format!(
                        "a string mentions `{name}`, which reaches interpreter internals when used as an attribute name (getattr, str.format); remove it"
                    ),
                );
                return;
            }
        }
    }
}

enum PathVerdict {
    Inside,
    Outside,
    Unknown,
}

/// Decides a write path from its known text (`complete` = whole path known).
fn path_verdict(p: &str, complete: bool) -> PathVerdict {
    dir_verdict(p, complete, &["out", "tmp"])
}

/// Decides whether a path (its known text; `complete` = whole path known)
/// stays under one of the top-level directories `dirs`.
fn dir_verdict(p: &str, complete: bool, dirs: &[&str]) -> PathVerdict {
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
fn has_dotdot(e: &Expr, depth: usize) -> bool {
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
fn literal_suffix(e: &Expr) -> Option<String> {
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

/// True when a (parsed) type expression contains anything but names,
/// attributes, subscripts, `|`, tuples/lists and literals.
fn annotation_has_code(e: &Expr, depth: usize) -> bool {
    if depth > 64 {
        return true;
    }
    match e {
        Expr::Name(_)
        | Expr::NoneLiteral(_)
        | Expr::EllipsisLiteral(_)
        | Expr::NumberLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::BytesLiteral(_) => false,
        Expr::StringLiteral(s) => match ruff_python_parser::parse_expression(s.value.to_str()) {
            Ok(p) => annotation_has_code(&p.syntax().body, depth + 1),
            Err(_) => false,
        },
        Expr::Attribute(a) => annotation_has_code(&a.value, depth + 1),
        Expr::Subscript(s) => {
            annotation_has_code(&s.value, depth + 1) || annotation_has_code(&s.slice, depth + 1)
        }
        Expr::Tuple(t) => t.elts.iter().any(|x| annotation_has_code(x, depth + 1)),
        Expr::List(l) => l.elts.iter().any(|x| annotation_has_code(x, depth + 1)),
        Expr::BinOp(b) if matches!(b.op, ast::Operator::BitOr) => {
            annotation_has_code(&b.left, depth + 1) || annotation_has_code(&b.right, depth + 1)
        }
        Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) => {
            annotation_has_code(&u.operand, depth + 1)
        }
        _ => true,
    }
}

fn is_dunder(name: &str) -> bool {
    name.len() > 4 && name.starts_with("__") && name.ends_with("__")
}

/// Every `__word__` inside a string.
fn dunders_in(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 4 < b.len() {
        if b[i] == b'_' && b[i + 1] == b'_' {
            let start = i;
            let mut j = i + 2;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            let word = &text[start..j];
            // interpreter dunders are lowercase (`__MAIN__` is just text)
            if word.len() > 4
                && word.ends_with("__")
                && word[2..word.len() - 2].bytes().any(|c| c != b'_')
                && !word.bytes().any(|c| c.is_ascii_uppercase())
            {
                let inner = word.trim_start_matches('_').trim_end_matches('_');
                if !inner.is_empty() {
                    out.push(word);
                }
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
        if out.len() > 64 {
            break;
        }
    }
    out
}

fn family_description(rule: RuleId) -> &'static str {
    match rule {
        RuleId::Process => {
            "starting processes or sending signals is not allowed; compute the result in Python"
        }
        RuleId::Network => "the sandbox has no network; pass data as inputs instead of fetching it",
        RuleId::NativeCode => "loading native code bypasses every Python-level check",
        RuleId::UnsafeDeserialization => {
            "unpickling runs code chosen by whoever wrote the data; use CSV, JSON or numpy.save/np.load without pickle"
        }
        RuleId::InterpreterState => {
            "changing or inspecting interpreter state (modules, frames, hooks) can undo the sandbox's checks"
        }
        RuleId::EvalExec => {
            "running code built at run time hides it from the check; write the code directly"
        }
        RuleId::DynamicImport => {
            "imports must be written as `import x` statements so the policy can check them"
        }
        RuleId::Reflection => {
            "namespace and debugger access lets code reach anything; use variables directly"
        }
        _ => "denied",
    }
}

impl<'a> Visitor<'a> for Checker<'_, '_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if !self.enter(stmt.start()) {
            return;
        }
        self.check_import_stmt(stmt);
        visitor::walk_stmt(self, stmt);
        self.depth -= 1;
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if !self.enter(expr.start()) {
            return;
        }
        match expr {
            Expr::Call(c) => self.check_call(c),
            Expr::Name(n) => self.check_name(n),
            Expr::Attribute(a) => self.check_attribute(a),
            _ => {}
        }
        // Strings built from pieces (`"{0.__glob" + "als__}"`) are scanned
        // as a whole, too.
        if matches!(
            expr,
            Expr::BinOp(_) | Expr::FString(_) | Expr::Call(_) | Expr::Subscript(_)
        ) && let Some(folded) = self.env.fold(expr, 0)
        {
            self.scan_string(&folded, expr.start());
        }
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }

    fn visit_annotation(&mut self, expr: &'a Expr) {
        self.check_annotation_strings(expr, 0);
        visitor::walk_annotation(self, expr);
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        if !self.enter(pattern.start()) {
            return;
        }
        visitor::walk_pattern(self, pattern);
        self.depth -= 1;
    }

    fn visit_pattern_keyword(&mut self, kw: &'a PatternKeyword) {
        // `case C(attr=x)` reads `attr` from the subject like getattr.
        self.check_attr_name(kw.attr.id.as_str(), kw.attr.range.start(), false);
        visitor::walk_pattern_keyword(self, kw);
    }

    fn visit_string_literal(&mut self, s: &'a ast::StringLiteral) {
        self.scan_string(&s.value, s.range.start());
    }

    fn visit_bytes_literal(&mut self, b: &'a ast::BytesLiteral) {
        let text = String::from_utf8_lossy(&b.value);
        self.scan_string(&text, b.range.start());
    }

    fn visit_interpolated_string_element(&mut self, el: &'a InterpolatedStringElement) {
        if let InterpolatedStringElement::Literal(l) = el {
            self.scan_string(&l.value, l.range.start());
        }
        visitor::walk_interpolated_string_element(self, el);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dunder_scan_finds_words() {
        assert_eq!(dunders_in("{0.__globals__}"), vec!["__globals__"]);
        assert_eq!(
            dunders_in("__init__.py and __main__"),
            vec!["__init__", "__main__"]
        );
        assert!(dunders_in("a__b").is_empty());
        assert!(dunders_in("____").is_empty());
    }

    #[test]
    fn coding_declarations() {
        assert!(bad_coding_declaration("# -*- coding: utf-8 -*-\nx=1").is_none());
        assert!(bad_coding_declaration("#!/usr/bin/python\n# coding=utf_7\n").is_some());
        assert!(bad_coding_declaration("x = 1\n# coding: utf-7\n").is_none());
    }

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
