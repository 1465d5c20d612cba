//! Name resolution: what each name and expression may refer to (dotted
//! names), and the constant strings expressions fold to.
//!
//! A flow-insensitive pass ([`Binder`]) binds every name to the dotted names
//! it may hold; [`Env`] resolves expressions and folds constants with it.

use std::collections::HashMap;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, InterpolatedStringElement, Pattern, Stmt};

use super::MAX_NESTING;

/// Resolution and constant folding follow at most this many levels.
pub(super) const MAX_RESOLVE_DEPTH: usize = 32;
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
pub(super) struct Env<'b> {
    /// Name → dotted names it may refer to (`o` → `os`, `s` → `os.system`).
    pub(super) bindings: &'b HashMap<String, Vec<String>>,
    /// Name → constant strings assigned to it.
    pub(super) consts: &'b HashMap<String, Vec<String>>,
    /// Name → the keys of the dict it holds (see [`Binder::dicts`]).
    pub(super) dicts: &'b HashMap<String, Keys>,
}

/// The keys a dict may hold, when every one is known; `None` when one is not.
pub(super) type Keys = Option<Vec<String>>;

/// The union of two key sets (unknown when either is).
fn merge_keys(a: Keys, b: Keys) -> Keys {
    let (mut a, b) = (a?, b?);
    for k in b {
        if !a.contains(&k) {
            a.push(k);
        }
    }
    Some(a)
}

impl Env<'_> {
    /// The keys of the dict `expr` evaluates to, when all are known: a dict
    /// display (with `**` parts), `dict(...)` with keywords and mappings,
    /// `a | b`, a name bound only to such dicts (and its items set, its
    /// `update`s). `None` for anything else: the keys cannot be read.
    pub(super) fn dict_keys(&self, expr: &Expr, depth: usize) -> Keys {
        if depth > MAX_RESOLVE_DEPTH {
            return None;
        }
        match expr {
            Expr::Dict(d) => {
                let mut keys = Some(Vec::new());
                for item in &d.items {
                    let k = match &item.key {
                        Some(k) => Some(vec![self.fold(k, depth + 1)?]),
                        None => self.dict_keys(&item.value, depth + 1),
                    };
                    keys = merge_keys(keys, k);
                }
                keys
            }
            Expr::Call(c)
                if self
                    .resolve(&c.func, depth + 1)
                    .iter()
                    .any(|f| f == "builtins.dict") =>
            {
                let mut keys = Some(Vec::new());
                for a in &c.arguments.args {
                    keys = merge_keys(keys, self.dict_keys(a, depth + 1));
                }
                for k in &c.arguments.keywords {
                    let more = match &k.arg {
                        Some(name) => Some(vec![name.id.to_string()]),
                        None => self.dict_keys(&k.value, depth + 1),
                    };
                    keys = merge_keys(keys, more);
                }
                keys
            }
            Expr::BinOp(b) if matches!(b.op, ast::Operator::BitOr) => merge_keys(
                self.dict_keys(&b.left, depth + 1),
                self.dict_keys(&b.right, depth + 1),
            ),
            Expr::Name(n) => self.dicts.get(n.id.as_str()).cloned().flatten(),
            Expr::Named(n) => self.dict_keys(&n.value, depth + 1),
            _ => None,
        }
    }

    /// Dotted names a bare name may refer to; unbound names are builtins.
    pub(super) fn resolve_name(&self, id: &str) -> Vec<String> {
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
    pub(super) fn resolve_attr(&self, value: &Expr, attr: &str, depth: usize) -> Vec<String> {
        let mut out = Vec::new();
        for q in self.resolve(value, depth + 1) {
            push_capped(&mut out, format!("{q}.{attr}"));
        }
        out
    }

    /// Dotted names `expr` may evaluate to (modules, functions), best effort.
    pub(super) fn resolve(&self, expr: &Expr, depth: usize) -> Vec<String> {
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
    pub(super) fn fold(&self, expr: &Expr, depth: usize) -> Option<String> {
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
    pub(super) fn prefix(&self, expr: &Expr, depth: usize) -> Option<(String, bool)> {
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
#[derive(Default)]
pub(super) struct Binder {
    /// Name → dotted names it may refer to.
    pub(super) bindings: HashMap<String, Vec<String>>,
    /// Name → constant strings assigned to it.
    pub(super) consts: HashMap<String, Vec<String>>,
    /// Name → the keys of the dicts assigned to it, its items set and its
    /// `update`s; `None` once anything else is bound to it (a parameter, a
    /// loop variable, a call's result): then its keys cannot be read.
    pub(super) dicts: HashMap<String, Keys>,
    depth: usize,
}

impl Binder {
    fn env(&self) -> Env<'_> {
        Env {
            bindings: &self.bindings,
            consts: &self.consts,
            dicts: &self.dicts,
        }
    }

    /// Adds `keys` to what `name`'s dict may hold.
    fn add_keys(&mut self, name: &str, keys: Keys) {
        match self.dicts.get_mut(name) {
            Some(have) => *have = merge_keys(have.take(), keys),
            None => {
                self.dicts.insert(name.to_string(), keys);
            }
        }
    }

    /// `d[k] = v`, `d.update(...)`, `d.setdefault(k, v)`, `d |= {...}` on a
    /// name already bound to a dict: its keys grow (an unknown key makes
    /// them unknown). Names not known as dicts stay unknown.
    fn mutate_dict(&mut self, name: &str, keys: Keys) {
        if self.dicts.contains_key(name) {
            self.add_keys(name, keys);
        }
    }

    fn bind_value(&mut self, target: &Expr, value: &Expr) {
        match (target, value) {
            (Expr::Name(n), v) => {
                let (qs, cs, ks) = {
                    let env = self.env();
                    (env.resolve(v, 0), env.fold(v, 0), env.dict_keys(v, 0))
                };
                let id = n.id.to_string();
                self.add_keys(&id, ks);
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
                self.add_keys(n.id.as_str(), None);
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
        self.add_keys(name, None);
        push_capped(
            self.bindings.entry(name.to_string()).or_default(),
            qualified,
        );
    }

    fn bind_parameters(&mut self, params: &ast::Parameters) {
        for p in params.iter() {
            self.add_keys(p.name().id.as_str(), None);
        }
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
        self.nested(|b| b.bind_stmt(stmt));
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        self.nested(|b| b.bind_expr(expr));
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        self.nested(|b| visitor::walk_pattern(b, pattern));
    }
}

impl Binder {
    /// Runs `f` one level deeper, unless the code nests deeper than the
    /// checker follows.
    fn nested(&mut self, f: impl FnOnce(&mut Self)) {
        if self.depth > MAX_NESTING {
            return;
        }
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }

    /// What one statement binds, then its children.
    fn bind_stmt(&mut self, stmt: &Stmt) {
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
                    if let Expr::Subscript(sub) = t
                        && let Expr::Name(d) = &*sub.value
                    {
                        let key = self.env().fold(&sub.slice, 0).map(|k| vec![k]);
                        self.mutate_dict(d.id.as_str(), key);
                    }
                    self.bind_value(t, &a.value);
                }
            }
            Stmt::AnnAssign(a) => match &a.value {
                Some(v) => self.bind_value(&a.target, v),
                None => self.bind_opaque(&a.target),
            },
            Stmt::AugAssign(a) => match &*a.target {
                Expr::Name(n) if matches!(a.op, ast::Operator::BitOr) => {
                    let keys = self.env().dict_keys(&a.value, 0);
                    self.mutate_dict(n.id.as_str(), keys);
                }
                _ => self.bind_opaque(&a.target),
            },
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
    }

    /// What one expression binds (walrus, lambda defaults, comprehension
    /// targets), then its children.
    fn bind_expr(&mut self, expr: &Expr) {
        match expr {
            Expr::Named(n) => self.bind_value(&n.target, &n.value),
            Expr::Call(c) => {
                if let Expr::Attribute(a) = &*c.func
                    && let Expr::Name(d) = &*a.value
                    && matches!(a.attr.id.as_str(), "update" | "setdefault")
                {
                    let env = self.env();
                    let keys = if a.attr.id.as_str() == "setdefault" {
                        c.arguments
                            .args
                            .first()
                            .and_then(|k| env.fold(k, 0))
                            .map(|k| vec![k])
                    } else {
                        let mut keys = Some(Vec::new());
                        for arg in &c.arguments.args {
                            keys = merge_keys(keys, env.dict_keys(arg, 0));
                        }
                        for k in &c.arguments.keywords {
                            let more = match &k.arg {
                                Some(name) => Some(vec![name.id.to_string()]),
                                None => env.dict_keys(&k.value, 0),
                            };
                            keys = merge_keys(keys, more);
                        }
                        keys
                    };
                    self.mutate_dict(d.id.as_str(), keys);
                }
            }
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
    }
}
