//! Calls that reach what a call names only indirectly: keywords passed as a
//! `**` dict (`np.load(p, **{"allow_pickle": True})`), attributes read by
//! the fields of a format string (`"{0.system}".format(os)`), and file
//! descriptors the code did not open (`os.read(0, n)`, `os.dup2(0, 1)`).

use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::{Ranged, TextSize};

use super::checker::Checker;
use crate::rules::RuleId;

/// Keywords denied in any call, with the rule their findings carry and
/// what to write instead; the functions that take them are
/// [`takes_denied_keyword`].
const DENIED_KEYWORDS: &[(&str, RuleId, &str)] = &[(
    "allow_pickle",
    RuleId::UnsafeDeserialization,
    "lets the file run arbitrary code when loaded; save arrays with numpy.save and load them without allow_pickle",
)];

/// Functions that take a keyword of [`DENIED_KEYWORDS`]: their `**`
/// keywords must be readable.
fn takes_denied_keyword(f: &str) -> bool {
    f.starts_with("numpy.") && (f.ends_with(".load") || f == "numpy.load")
}

impl Checker<'_, '_> {
    /// The denied keywords, named directly or inside a `**` dict; `**`
    /// keywords the checker cannot read, given to a function that takes a
    /// denied keyword (directly or through `functools.partial`).
    pub(super) fn check_keywords(&mut self, c: &ast::ExprCall, funcs: &[String]) {
        let mut takers: Vec<String> = funcs.to_vec();
        if funcs.iter().any(|f| f == "functools.partial")
            && let Some(first) = c.arguments.args.first()
        {
            takers.extend(self.env.resolve(first, 0));
        }
        let taker = takers.iter().find(|f| takes_denied_keyword(f));
        for k in &c.arguments.keywords {
            match &k.arg {
                Some(name) => {
                    let off = matches!(&k.value, Expr::BooleanLiteral(b) if !b.value);
                    if !off {
                        self.report_denied_keyword(name.id.as_str(), k.start(), None);
                    }
                }
                None => match self.env.dict_keys(&k.value, 0) {
                    Some(keys) => {
                        for key in keys {
                            self.report_denied_keyword(&key, k.start(), Some(&k.value));
                        }
                    }
                    None => {
                        if let Some(f) = taker {
                            let (why, rule, _) = DENIED_KEYWORDS[0];
                            self.report(
                                rule,
                                k.start(),
                                format!(
                                    "`{f}` takes `{why}`, and these `**` keywords are built in a way the checker cannot read; pass the keywords by name (`{why}=False` is the default)"
                                ),
                            );
                        }
                    }
                },
            }
        }
    }

    fn report_denied_keyword(&mut self, key: &str, offset: TextSize, dict: Option<&Expr>) {
        let Some((name, rule, why)) = DENIED_KEYWORDS.iter().find(|(n, _, _)| *n == key) else {
            return;
        };
        let how = if dict.is_some() {
            format!("`**` passes `{name}`")
        } else {
            format!("`{name}=True`")
        };
        self.report(*rule, offset, format!("{how}: it {why}"));
    }

    /// Each of the first `n` arguments of a descriptor function must be
    /// `f.fileno()` of a file the code opened (not `sys.stdin`, `sys.stdout`
    /// or `sys.stderr`, the sandbox's).
    pub(super) fn check_descriptors(&mut self, c: &ast::ExprCall, n: usize) {
        let args = &c.arguments.args;
        if args.iter().take(n).any(|a| matches!(a, Expr::Starred(_))) {
            self.report_descriptor(c.start(), "`*` arguments");
            return;
        }
        for a in args.iter().take(n) {
            if !self.own_descriptor(a) {
                let what = match a {
                    Expr::NumberLiteral(_) => "a descriptor number",
                    _ => "a descriptor it did not open",
                };
                self.report_descriptor(a.start(), what);
            }
        }
    }

    /// `f.fileno()` where `f` is none of the interpreter's own streams.
    fn own_descriptor(&self, e: &Expr) -> bool {
        let Expr::Call(call) = e else { return false };
        let Expr::Attribute(a) = &*call.func else {
            return false;
        };
        a.attr.id.as_str() == "fileno"
            && call.arguments.is_empty()
            && !self
                .env
                .resolve(&a.value, 0)
                .iter()
                .any(|q| q.starts_with("sys.") || q == "sys")
    }

    pub(super) fn report_descriptor(&mut self, offset: TextSize, what: &str) {
        self.report(
            RuleId::Descriptor,
            offset,
            format!(
                "a file-descriptor operation on {what}: the descriptors the code inherits (stdin, stdout, stderr, the runner's) are the sandbox's; use a file object the code opened (`with open('/out/x.txt', 'w') as f: f.write(...)`) or pass `f.fileno()` of one"
            ),
        );
    }

    /// The dotted names (modules, members reached from them) `e` may be;
    /// not builtins.
    fn modules_of(&self, e: &Expr) -> Vec<String> {
        self.env
            .resolve(e, 0)
            .into_iter()
            .filter(|q| !q.starts_with("builtins."))
            .collect()
    }

    /// `"{0.system}".format(os)`, `template.format_map({...})`,
    /// `str.format(t, ...)`: a field that reads an attribute of an argument
    /// that is a module (or a name reached from one) is getattr by string;
    /// a field's attribute is checked like any attribute name; a format
    /// string the checker cannot read may not be given a module.
    pub(super) fn check_format(&mut self, c: &ast::ExprCall, funcs: &[String]) {
        let args = &c.arguments.args;
        let (template, rest, map) = match &*c.func {
            Expr::Attribute(a)
                if matches!(a.attr.id.as_str(), "format" | "format_map")
                    && self.env.resolve(&a.value, 0).is_empty() =>
            {
                (&*a.value, &args[..], a.attr.id.as_str() == "format_map")
            }
            _ if funcs
                .iter()
                .any(|f| f == "builtins.str.format" || f == "builtins.str.format_map") =>
            {
                let Some(t) = args.first() else { return };
                let map = funcs.iter().any(|f| f == "builtins.str.format_map");
                (t, &args[1..], map)
            }
            _ => return,
        };
        // The arguments by position and by name (a format_map's dict literal).
        let mut named: Vec<(String, &Expr)> = c
            .arguments
            .keywords
            .iter()
            .filter_map(|k| Some((k.arg.as_ref()?.id.to_string(), &k.value)))
            .collect();
        if map && let Some(Expr::Dict(d)) = rest.first() {
            for item in &d.items {
                if let Some(key) = item.key.as_ref().and_then(|k| self.env.fold(k, 0)) {
                    named.push((key, &item.value));
                }
            }
        }
        let Some(text) = self.env.fold(template, 0) else {
            let given = rest
                .iter()
                .chain(named.iter().map(|(_, v)| *v))
                .chain(c.arguments.keywords.iter().map(|k| &k.value));
            if let Some(m) = given.flat_map(|e| self.modules_of(e)).next() {
                self.report(
                    RuleId::DynamicAttribute,
                    c.start(),
                    format!(
                        "a format string the checker cannot read is given `{m}`: its fields could read any attribute of it by name (`{{0.system}}`); format the values themselves (`f\"{{value}}\"`)"
                    ),
                );
            }
            return;
        };
        let positional = if map { &[][..] } else { rest };
        for (arg, attrs) in format_fields(&text) {
            let value = match arg {
                FieldArg::Index(i) => positional.get(i),
                FieldArg::Name(n) => named.iter().find(|(k, _)| *k == n).map(|(_, v)| *v),
            };
            let Some(first) = attrs.first() else { continue };
            if let Some(m) = value.and_then(|v| self.modules_of(v).into_iter().next()) {
                self.report(
                    RuleId::DynamicAttribute,
                    c.start(),
                    format!(
                        "the format field reads `{m}.{first}` by a name inside the string (getattr by string); write the attribute in code (`f\"{{{m}.{first}}}\"` is checked) or format the value itself"
                    ),
                );
                continue;
            }
            for attr in &attrs {
                self.check_attr_name(attr, c.start(), false);
            }
        }
    }
}

/// Which argument a format field names.
#[derive(Debug, PartialEq)]
enum FieldArg {
    Index(usize),
    Name(String),
}

/// The fields of a format string: the argument each names and the
/// attributes it reads (`{0.a.b}` → index 0, `[a, b]`; `{x[k].c}` → `x`,
/// `[c]`); automatic numbering as `str.format` counts it. Nested fields in
/// a format spec (`{0:{1.x}}`) are found too.
fn format_fields(text: &str) -> Vec<(FieldArg, Vec<String>)> {
    let b = text.as_bytes();
    let (mut out, mut auto, mut i) = (Vec::new(), 0usize, 0usize);
    while i < b.len() {
        if b[i] != b'{' {
            i += 1;
            continue;
        }
        if b.get(i + 1) == Some(&b'{') {
            i += 2;
            continue;
        }
        let start = i + 1;
        let mut end = start;
        while end < b.len() && !matches!(b[end], b'!' | b':' | b'}' | b'{') {
            end += 1;
        }
        let field = &text[start..end];
        let head_end = field.find(['.', '[']).unwrap_or(field.len());
        let head = &field[..head_end];
        let arg = if head.is_empty() {
            auto += 1;
            FieldArg::Index(auto - 1)
        } else if let Ok(n) = head.parse::<usize>() {
            FieldArg::Index(n)
        } else {
            FieldArg::Name(head.to_string())
        };
        let mut attrs = Vec::new();
        let mut rest = &field[head_end..];
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('.') {
                let n = r.find(['.', '[']).unwrap_or(r.len());
                attrs.push(r[..n].to_string());
                rest = &r[n..];
            } else if let Some(r) = rest.strip_prefix('[') {
                rest = r.find(']').map_or("", |n| &r[n + 1..]);
            } else {
                break;
            }
        }
        out.push((arg, attrs));
        i = end.max(start);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_fields_name_their_argument_and_attributes() {
        let f = format_fields("{0.system} {{x.y}} {} {m.environ.x} {d[k].c:{1.w}}");
        assert_eq!(
            f,
            [
                (FieldArg::Index(0), vec!["system".to_string()]),
                (FieldArg::Index(0), vec![]),
                (
                    FieldArg::Name("m".into()),
                    vec!["environ".to_string(), "x".to_string()]
                ),
                (FieldArg::Name("d".into()), vec!["c".to_string()]),
                (FieldArg::Index(1), vec!["w".to_string()]),
            ]
        );
        assert!(
            format_fields("{:.2f} and {0[mean]:,.1f}")
                .iter()
                .all(|(_, a)| a.is_empty())
        );
    }
}
