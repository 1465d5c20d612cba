//! The rules, each declared once in the table below.
//!
//! One line per rule gives its id (the [`RuleId`] variant and its stable
//! string), its severity, whether a policy may escalate it and what it
//! catches. The enum, its serde form, `code.escalate` validation, the
//! checker's severities and the rule table in docs/policy.md all come from
//! that line (a test holds the table to it). The names a family rule denies are
//! declared once in `families`.
//!
//! The built-in rules are always active: a policy can add to them
//! (`deny_modules`, `deny_calls`) or turn their findings into escalations,
//! but it cannot switch them off.

use serde::{Deserialize, Serialize};

use super::verdict::Severity;

/// Whether a policy may turn a rule's findings into escalations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Escalates {
    /// Never: such code cannot be checked or reviewed meaningfully.
    Never,
    /// When `code.escalate` lists the rule.
    Yes,
    /// When `code.escalate` lists the rule, or this shorthand key is on.
    AlsoBy(&'static str),
}

/// One rule, as declared.
#[derive(Debug)]
pub(crate) struct Rule {
    /// The stable string form (kebab-case).
    pub(crate) name: &'static str,
    /// How serious a finding is before the policy's escalations.
    pub(crate) severity: Severity,
    /// Whether the policy may escalate it.
    pub(crate) escalates: Escalates,
    /// What it catches (Markdown): the variant's doc and the table of
    /// docs/policy.md, which a test makes from it.
    #[cfg(test)]
    pub(crate) catches: &'static str,
}

/// Declares every rule: the [`RuleId`] enum (each variant's serde name is
/// the declared id) and [`RULES`], in the same order.
macro_rules! rules {
    ($( $variant:ident = $name:literal, $severity:ident, $escalates:expr, $catches:literal; )*) => {
        /// A stable rule id. The string form (kebab-case) appears in
        /// findings, in `code.escalate` and in reports.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum RuleId {
            $(
                #[doc = $catches]
                #[serde(rename = $name)]
                $variant,
            )*
        }

        impl RuleId {
            /// Every rule id, in table order.
            pub const ALL: &'static [RuleId] = &[$(RuleId::$variant),*];
        }

        /// Every rule, in the order of [`RuleId`].
        pub(crate) const RULES: &[Rule] = &[
            $(
                Rule {
                    name: $name,
                    severity: Severity::$severity,
                    escalates: $escalates,
                    #[cfg(test)]
                    catches: $catches,
                },
            )*
        ];
    };
}

use Escalates::{AlsoBy, Never, Yes};

rules! {
    SyntaxError = "syntax-error", Deny, Never,
        "the code does not parse (position of the error)";
    CodeTooLarge = "code-too-large", Deny, Never,
        "more bytes than `code.max_bytes` (checked before parsing)";
    TooComplex = "too-complex", Deny, Never,
        "more than 200 nested brackets (CPython's own limit) or 300 nested statements/expressions";
    SourceEncoding = "source-encoding", Deny, Never,
        "a `# coding:` declaration other than UTF-8/ASCII (Python would decode differently than checked), NUL bytes";
    ImportDenied = "import-denied", Deny, Yes,
        "a module in `code.deny_modules` (and its submodules), imported or reached, also as an attribute of a library that imported it (`sklearn.utils.parallel.joblib`, `pandas.io.common.mmap`: a module reached through attributes is the import it is; so is a re-export, resolved to its origin)";
    ImportNotAllowed = "import-not-allowed", Deny, AlsoBy("escalate_unknown_imports"),
        "an import outside `code.allow_imports`";
    RelativeImport = "relative-import", Deny, Yes,
        "`from . import x` (the code runs as one script)";
    StarImport = "star-import", Deny, Yes,
        "`from m import *` of a module with denied members (`os`)";
    DynamicImport = "dynamic-import", Deny, Yes,
        "`__import__`, `importlib.*`, `imp`, `runpy`, `pkgutil`, `zipimport`; a literal module name is also checked as an import";
    EvalExec = "eval-exec", Deny, Yes,
        "`eval`, `exec`, `compile`, `code`, `types.FunctionType/CodeType`, `timeit`, `cProfile`, `doctest`, `pandas.eval`, `.query()/.eval()` strings with `@name` or not literal";
    Reflection = "reflection", Deny, Yes,
        "`globals()`, `locals()`, `vars()`, `breakpoint()`, `help()`, `gc`, `inspect`, `pdb`";
    DunderEscape = "dunder-escape", Deny, Yes,
        "dunder attributes outside a safe list (`__subclasses__`, `__globals__`, `__builtins__`, `__code__`, `__mro__`, `__bases__`, `__dict__`, `__self__`, ...), dunder names such as `__builtins__`/`__loader__`, and strings that mention them (`str.format` escapes, `getattr` names), also in `case C(attr=...)` patterns";
    DangerousAttribute = "dangerous-attribute", Deny, Yes,
        "attributes named like process/import/frame/module handles on any object (`.system`, `.popen`, `.fork`, `.modules`, `.f_globals`, `.gi_frame`, `.os`, `.subprocess`, `.to_clipboard`, threadpoolctl's `.dynlib`, `.get_field`, `.import_optional_dependency`, ...), because the receiver cannot always be resolved (`[os][0].system`)";
    DynamicAttribute = "dynamic-attribute", Deny, Yes,
        "`getattr`/`setattr`/`delattr`/`attrgetter`/`methodcaller` with a name that does not fold to a constant, or these functions used as values; `string.Formatter`; `str.format`/`format_map` fields that read attributes (`\"{0.system}\".format(os)`), or a format string the checker cannot read given a module";
    PrivateAttribute = "private-attribute", Deny, Yes,
        "a private (`_name`) module or attribute of an imported module or of what it holds (`pandas._testing`, `from sklearn.utils._testing import ...`, `matplotlib._get_executable_info`, `getattr(pd, '_libs')`, `attrgetter('_x')`): libraries' internals (their test, subprocess and import helpers) are no API for analysis code";
    Descriptor = "descriptor", Deny, Yes,
        "`os.close`, `os.read`, `os.write(v)`, `os.dup2`, `os.lseek`, `os.fdopen`, ... (any `os` call on a file descriptor) unless each descriptor is `f.fileno()` of a file the code opened (not `sys.stdout`), `open(1)` on a descriptor number, and these functions used as values: the code's inherited descriptors are the sandbox's";
    InterpreterState = "interpreter-state", Deny, Yes,
        "`sys.modules`, `sys.path`, `sys.meta_path`, `sys._getframe`, `sys.settrace`/`setprofile`, `sys.addaudithook`";
    Process = "process", Deny, Yes,
        "`subprocess`, `os.system/popen/exec*/spawn*/fork*/posix_spawn*/kill*`, `pty`, `multiprocessing`, `signal`, `platform.popen`, `pandas.read_clipboard`, matplotlib's `testing`, `texmanager` and `dviread`, `statsmodels.tsa.x13`";
    Network = "network", Deny, Yes,
        "`socket`, `ssl`, `urllib.request`, `http.client`, `requests`, `httpx`, `aiohttp`, `ftplib`, `smtplib`, ...";
    NativeCode = "native-code", Deny, Yes,
        "`ctypes`, `cffi`, `numpy.ctypeslib`, `numpy.f2py`, `distutils`, `setuptools`";
    UnsafeDeserialization = "unsafe-deserialization", Deny, Yes,
        "`pickle.load(s)`, `marshal.load(s)`, `shelve`, `dill`, `joblib.load`, `pandas.read_pickle`, `pandas.compat.pickle_compat`, statsmodels' `load`/`load_pickle` and `Results.load`, any call with `allow_pickle=True`, also as a `**` dict (`**{'allow_pickle': True}`, a dict built by name), and `numpy.load(**kw)` with keywords the checker cannot read";
    CallDenied = "call-denied", Deny, Yes,
        "a resolved name matching `code.deny_calls` (`os.remove`, `os.exec*`)";
    OpenWriteOutsideOutput = "open-write-outside-output", Deny, Yes,
        "`open()`/`io.open` for writing, or `to_csv`/`savefig`/`np.save`-style writers, to a known path outside `/out` and `/tmp` (relative paths and `..` included)";
    OpenWriteUnknownPath = "open-write-unknown-path", Info, Never,
        "`open()` for writing to a path the checker cannot determine (the sandbox still confines writes)";
    OpenReadOutside = "open-read-outside", Deny, Yes,
        "`open()`, `pathlib.Path(...)`, `pandas.read_*`, `numpy.load*`, `imread` of a known path outside `/data`, `/tmp` and `/out` (`/etc/shadow`, `/root/.bashrc`, `../etc/passwd` from `/tmp`)";
    CodeFileWrite = "code-file-write", Deny, Yes,
        "writing `.py`, `.pyc`, `.pth`, `.so` files (code the check never saw)";
    InternalError = "internal-error", Deny, Never,
        "the checker itself failed; never expected";
}

impl RuleId {
    /// The rule as declared.
    pub(crate) fn rule(self) -> &'static Rule {
        &RULES[self as usize]
    }

    /// The stable string id.
    pub fn as_str(self) -> &'static str {
        self.rule().name
    }

    /// Whether a policy may turn this rule's findings into escalations.
    /// Code that does not parse, is too large or too deep cannot be
    /// reviewed meaningfully and is always denied.
    pub(crate) fn escalatable(self) -> bool {
        self.rule().escalates != Escalates::Never
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule table of docs/policy.md, made from the declaration.
    fn doc_table() -> String {
        let mut out = String::from(
            "| rule | severity | escalate? | what it catches |\n|------|----------|-----------|-----------------|\n",
        );
        for r in RULES {
            let severity = match r.severity {
                Severity::Info => "info",
                Severity::Escalate => "escalate",
                Severity::Deny => "deny",
            };
            let escalates = match r.escalates {
                Never => "never".to_string(),
                Yes => "yes".to_string(),
                AlsoBy(key) => format!("yes (`{key}`)"),
            };
            out.push_str(&format!(
                "| `{}` | {severity} | {escalates} | {} |\n",
                r.name, r.catches
            ));
        }
        out
    }

    #[test]
    fn the_table_is_in_enum_order_and_each_id_is_its_serde_form() {
        assert_eq!(RULES.len(), RuleId::ALL.len());
        for (i, (r, id)) in RULES.iter().zip(RuleId::ALL).enumerate() {
            assert_eq!(*id as usize, i);
            assert_eq!(id.rule().name, r.name);
            let j = serde_json::to_string(id).unwrap();
            assert_eq!(j, format!("\"{}\"", id.as_str()));
            assert_eq!(serde_json::from_str::<RuleId>(&j).unwrap(), *id);
            assert!(
                !r.catches.contains('|'),
                "{}: a `|` breaks the table",
                r.name
            );
        }
    }

    #[test]
    fn the_docs_rule_table_is_the_declaration() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/policy.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let (begin, end) = ("<!-- rules:begin -->\n", "<!-- rules:end -->");
        let start = readme
            .find(begin)
            .expect("docs/policy.md lacks <!-- rules:begin -->")
            + begin.len();
        let stop = readme[start..]
            .find(end)
            .expect("docs/policy.md lacks <!-- rules:end -->")
            + start;
        let expected = doc_table();
        assert!(
            readme[start..stop] == expected,
            "docs/policy.md's rule table differs from crates/policy/src/rules.rs; put this between the markers:\n{expected}"
        );
    }
}
