//! Calls: attribute functions (`getattr`, `attrgetter`), dynamic imports,
//! file opens, readers and writers, `query`/`eval` strings, pickle flags.

use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::{Ranged, TextSize};

use super::checker::Checker;
use super::names::{descriptor_args, is_private};
use super::paths::{
    CODE_SUFFIXES, PathVerdict, READ_DIRS, dir_verdict, has_dotdot, literal_suffix, path_verdict,
};
use crate::rules::RuleId;

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

/// Functions that open files; checked for write modes.
const OPEN_FUNCTIONS: &[&str] = &["builtins.open", "io.open", "codecs.open", "io.FileIO"];

impl Checker<'_, '_> {
    pub(super) fn check_call(&mut self, c: &ast::ExprCall) {
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
                            let full = format!("{q}.{name}");
                            reported |= self.check_qualified(&full, name_expr.start());
                            if !reported && is_private(&name) {
                                reported |= self.check_private(&full, name_expr.start());
                            }
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
                            if is_private(part) {
                                self.report(
                                    RuleId::PrivateAttribute,
                                    n.start(),
                                    format!(
                                        "attrgetter/methodcaller of `{part}`, a private (`_`) name: libraries' internals are no API for analysis code; use the public attribute"
                                    ),
                                );
                            }
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
        self.check_keywords(c, &funcs);
        if let Some(n) = funcs.iter().find_map(|f| descriptor_args(f)) {
            self.check_descriptors(c, n);
        }
        self.check_format(c, &funcs);
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
        if matches!(path, Expr::NumberLiteral(_) | Expr::UnaryOp(_)) {
            self.report_descriptor(path.start(), "a descriptor number given to `open`");
            return;
        }
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
}
