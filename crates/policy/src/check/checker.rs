//! Pass 2: the walk that reports findings for imports, names, attributes
//! and strings; calls are checked in `calls`.

use std::collections::HashSet;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{
    self as ast, Expr, ExprContext, InterpolatedStringElement, Pattern, PatternKeyword, Stmt,
};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::names::{
    ATTRIBUTE_FUNCTIONS, DANGEROUS_ATTRIBUTES, SAFE_DUNDER_NAMES, SAFE_DUNDERS, dunders_in,
    is_descriptor_function, is_dunder, is_private,
};
use super::patterns::{Patterns, Source, allows};
use super::reach;
use super::resolve::Env;
use super::{MAX_NESTING, RawFinding, raw};
use crate::config::Policy;
use crate::families::FAMILIES;
use crate::rules::RuleId;

/// matplotlib settings that name executables.
const RC_EXECUTABLE_KEYS: &[&str] = &["animation.ffmpeg_path", "animation.convert_path"];

/// Pass 2: findings.
pub(super) struct Checker<'p, 'b> {
    pub(super) policy: &'p Policy,
    /// The patterns resolved names are matched against.
    pub(super) patterns: Patterns,
    /// What names refer to.
    pub(super) env: Env<'b>,
    /// What was found so far.
    pub(super) findings: Vec<RawFinding>,
    /// The modules imported so far, in source order, each once.
    pub(super) imports: Vec<String>,
    /// `a.b` for each `from a import b`, in source order, each once.
    pub(super) from_names: Vec<String>,
    /// How deep the walk is.
    pub(super) depth: usize,
    /// Whether `too-complex` was reported.
    pub(super) too_deep: bool,
    /// Ranges of expressions that are the function of a call.
    pub(super) callees: HashSet<TextRange>,
}

impl Checker<'_, '_> {
    pub(super) fn report(&mut self, rule: RuleId, offset: TextSize, message: String) {
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
    ///
    /// A name the patterns do not cover may still reach a denied one: a
    /// re-export is checked as its origin, and each tail of the name as the
    /// module a library imported ([`reach`]), named in the message as what
    /// `q` reaches.
    pub(super) fn check_qualified(&mut self, q: &str, offset: TextSize) -> bool {
        if let Some(origin) = reach::origin(q) {
            return self.check_reexport(q, &origin, offset);
        }
        let found = std::iter::once(q)
            .chain(reach::suffixes(q))
            .find_map(|name| Some((name, self.patterns.find(name)?)));
        let Some((matched, (src, p))) = found else {
            return false;
        };
        let p = p.to_string();
        self.report_pattern(q, matched, src, &p, offset);
        true
    }

    /// A re-export `q` of `origin`: the import of origin's module, which the
    /// policy must allow like `import` of it.
    fn check_reexport(&mut self, q: &str, origin: &str, offset: TextSize) -> bool {
        if let Some((src, p)) = self.patterns.find(origin) {
            let p = p.to_string();
            self.report_pattern(q, origin, src, &p, offset);
            return true;
        }
        let module = origin.split('.').next().unwrap_or(origin);
        if self
            .policy
            .code
            .allow_imports
            .iter()
            .any(|p| allows(p, module))
        {
            return false;
        }
        self.report(
            RuleId::ImportNotAllowed,
            offset,
            format!(
                "`{q}` is `{origin}`, re-exported: module `{module}` is not in the policy's allowlist (code.allow_imports); use the library's documented API instead"
            ),
        );
        true
    }

    /// Reports `q`, which is (or reaches) `matched`, covered by pattern `p`.
    fn report_pattern(&mut self, q: &str, matched: &str, src: Source, p: &str, offset: TextSize) {
        let shown = matched.strip_prefix("builtins.").unwrap_or(matched);
        let through = if q == matched {
            String::new()
        } else {
            format!(
                "; `{q}` reaches it (a module or name a library imported or re-exports is what it is)"
            )
        };
        let (rule, msg) = match src {
            Source::Family(family) => (
                family.rule,
                format!(
                    "`{shown}` is denied: {} (matches built-in rule `{p}`){through}",
                    family.why
                ),
            ),
            Source::DenyModule if matched == p.trim_end_matches(".*") => (
                RuleId::ImportDenied,
                format!(
                    "module `{matched}` is denied by the policy (code.deny_modules){through}; use an allowed module instead"
                ),
            ),
            Source::DenyModule => (
                RuleId::ImportDenied,
                format!(
                    "`{matched}` belongs to module `{p}`, which the policy denies (code.deny_modules){through}; use an allowed module instead"
                ),
            ),
            Source::DenyCall => (
                RuleId::CallDenied,
                format!(
                    "`{shown}` is denied by the policy (code.deny_calls: `{}`){through}",
                    p.strip_prefix("builtins.").unwrap_or(p)
                ),
            ),
        };
        self.report(rule, offset, msg);
    }

    /// Checks a module being imported (statement, `__import__('x')`).
    pub(super) fn check_import(
        &mut self,
        module: &str,
        offset: TextSize,
        also_allowed_as: Option<&str>,
    ) {
        if module == "__future__" {
            return;
        }
        if !self.imports.iter().any(|m| m == module) {
            self.imports.push(module.to_string());
        }
        if self.check_qualified(module, offset) || self.check_private(module, offset) {
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
                        let below = format!("{m}.");
                        let risky = FAMILIES
                            .iter()
                            .flat_map(|f| f.patterns())
                            .any(|p| p.starts_with(&below))
                            || self
                                .policy
                                .code
                                .deny_calls
                                .iter()
                                .any(|p| p.starts_with(&below));
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
                    if !self.from_names.contains(&full) {
                        self.from_names.push(full.clone());
                    }
                    if self.check_qualified(&full, a.range.start())
                        || self.check_private(&full, a.range.start())
                    {
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

    /// Reports the resolved dotted name `q` (a module, or a member reached
    /// from one) when a segment after its first is private (`_name`, not a
    /// dunder): `pandas._testing`, `matplotlib._get_executable_info`.
    /// Returns true when it reported.
    pub(super) fn check_private(&mut self, q: &str, offset: TextSize) -> bool {
        if q.starts_with("builtins.") {
            return false;
        }
        let Some(private) = q.split('.').skip(1).find(|s| is_private(s)) else {
            return false;
        };
        self.report(
            RuleId::PrivateAttribute,
            offset,
            format!(
                "`{q}` uses `{private}`, private to its library (a leading `_`): libraries' internals (their test, subprocess and import helpers) are no API for analysis code; use the documented public name (`pandas.testing`, `pandas.api`, `sklearn.utils`)"
            ),
        );
        true
    }

    /// Checks an attribute name (from `x.name`, `getattr(x, 'name')`,
    /// a match class pattern). `resolved` tells whether the receiver's
    /// dotted name was already checked and reported.
    pub(super) fn check_attr_name(&mut self, name: &str, offset: TextSize, resolved: bool) {
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
                if !is_callee && is_descriptor_function(&q) {
                    self.report_descriptor_value(&q, offset);
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

    pub(super) fn report_attr_function_value(&mut self, q: &str, offset: TextSize) {
        let shown = q.strip_prefix("builtins.").unwrap_or(q);
        self.report(
            RuleId::DynamicAttribute,
            offset,
            format!(
                "`{shown}` is used as a value, so the attribute names it will reach cannot be checked; call it directly with a literal name, or access the attribute directly"
            ),
        );
    }

    fn report_descriptor_value(&mut self, q: &str, offset: TextSize) {
        self.report(
            RuleId::Descriptor,
            offset,
            format!(
                "`{q}` acts on a file descriptor and is used as a value, so the descriptors it gets cannot be checked; call it directly on `f.fileno()` of a file the code opened"
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
            if !is_callee && is_descriptor_function(&q) {
                self.report_descriptor_value(&q, offset);
                reported = true;
            }
            if !reported && is_private(a.attr.id.as_str()) {
                reported |= self.check_private(&q, offset);
            }
        }
        self.check_attr_name(a.attr.id.as_str(), offset, reported);
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
