//! Stable rule ids and the built-in tables the checker matches against.
//!
//! The built-in families (process, network, native code, ...) are always
//! active: a policy can add to them (`deny_modules`, `deny_calls`) or turn
//! their findings into escalations, but it cannot switch them off.

use serde::{Deserialize, Serialize};

/// A stable rule id. The string form (kebab-case) appears in findings,
/// in `code.escalate` and in the table in [`crate::policy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleId {
    /// The code does not parse.
    SyntaxError,
    /// The code is larger than `code.max_bytes`.
    CodeTooLarge,
    /// The code nests deeper than the checker follows.
    TooComplex,
    /// A `# coding:` declaration other than UTF-8, or NUL bytes.
    SourceEncoding,
    /// An import of a module in `code.deny_modules`.
    ImportDenied,
    /// An import of a module not in `code.allow_imports`.
    ImportNotAllowed,
    /// A relative import (`from . import x`).
    RelativeImport,
    /// `from m import *` of a module with denied members.
    StarImport,
    /// `__import__`, `importlib.import_module` and friends.
    DynamicImport,
    /// `eval`, `exec`, `compile`, code objects.
    EvalExec,
    /// `globals()`, `locals()`, `vars()`, `breakpoint()`, `help()`, gc/inspect.
    Reflection,
    /// Dunder attributes or names that reach interpreter internals.
    DunderEscape,
    /// Attributes named like process/import/frame internals on any object.
    DangerousAttribute,
    /// `getattr`/`setattr`/`delattr` with a name that is not a literal, or
    /// these functions passed around as values.
    DynamicAttribute,
    /// `sys.modules`, `sys._getframe`, `sys.settrace`, import hooks.
    InterpreterState,
    /// Processes and signals: subprocess, os.system/popen/exec*/spawn*/fork, pty, multiprocessing, signal.
    Process,
    /// Sockets and network clients: socket, ssl, urllib.request, http.client, requests, ...
    Network,
    /// Foreign code: ctypes, cffi, numpy.ctypeslib.
    NativeCode,
    /// pickle/marshal loads, `pandas.read_pickle`, `numpy.load(allow_pickle=True)`.
    UnsafeDeserialization,
    /// A call or attribute listed in `code.deny_calls`.
    CallDenied,
    /// `open()` for writing outside `/out` or `/tmp`.
    OpenWriteOutsideOutput,
    /// `open()` for writing to a path the checker cannot determine (info).
    OpenWriteUnknownPath,
    /// Reading (`open`, `pathlib.Path`, `pandas.read_*`, `numpy.load*`) a
    /// known path outside `/data`, `/tmp` and `/out`.
    OpenReadOutside,
    /// Writing a Python module or extension (`.py`, `.pth`, `.pyc`, `.so`):
    /// code written at run time would escape the check.
    CodeFileWrite,
    /// The checker itself failed (never expected; the code is denied).
    InternalError,
}

impl RuleId {
    /// Every rule id, in table order.
    pub const ALL: &'static [RuleId] = &[
        RuleId::SyntaxError,
        RuleId::CodeTooLarge,
        RuleId::TooComplex,
        RuleId::SourceEncoding,
        RuleId::ImportDenied,
        RuleId::ImportNotAllowed,
        RuleId::RelativeImport,
        RuleId::StarImport,
        RuleId::DynamicImport,
        RuleId::EvalExec,
        RuleId::Reflection,
        RuleId::DunderEscape,
        RuleId::DangerousAttribute,
        RuleId::DynamicAttribute,
        RuleId::InterpreterState,
        RuleId::Process,
        RuleId::Network,
        RuleId::NativeCode,
        RuleId::UnsafeDeserialization,
        RuleId::CallDenied,
        RuleId::OpenWriteOutsideOutput,
        RuleId::OpenWriteUnknownPath,
        RuleId::OpenReadOutside,
        RuleId::CodeFileWrite,
        RuleId::InternalError,
    ];

    /// The stable string id.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleId::SyntaxError => "syntax-error",
            RuleId::CodeTooLarge => "code-too-large",
            RuleId::TooComplex => "too-complex",
            RuleId::SourceEncoding => "source-encoding",
            RuleId::ImportDenied => "import-denied",
            RuleId::ImportNotAllowed => "import-not-allowed",
            RuleId::RelativeImport => "relative-import",
            RuleId::StarImport => "star-import",
            RuleId::DynamicImport => "dynamic-import",
            RuleId::EvalExec => "eval-exec",
            RuleId::Reflection => "reflection",
            RuleId::DunderEscape => "dunder-escape",
            RuleId::DangerousAttribute => "dangerous-attribute",
            RuleId::DynamicAttribute => "dynamic-attribute",
            RuleId::InterpreterState => "interpreter-state",
            RuleId::Process => "process",
            RuleId::Network => "network",
            RuleId::NativeCode => "native-code",
            RuleId::UnsafeDeserialization => "unsafe-deserialization",
            RuleId::CallDenied => "call-denied",
            RuleId::OpenWriteOutsideOutput => "open-write-outside-output",
            RuleId::OpenWriteUnknownPath => "open-write-unknown-path",
            RuleId::OpenReadOutside => "open-read-outside",
            RuleId::CodeFileWrite => "code-file-write",
            RuleId::InternalError => "internal-error",
        }
    }

    /// Whether a policy may turn this rule's findings into escalations.
    /// Code that does not parse, is too large or too deep cannot be
    /// reviewed meaningfully and is always denied.
    pub(crate) fn escalatable(self) -> bool {
        !matches!(
            self,
            RuleId::SyntaxError
                | RuleId::CodeTooLarge
                | RuleId::TooComplex
                | RuleId::SourceEncoding
                | RuleId::InternalError
                | RuleId::OpenWriteUnknownPath
        )
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Built-in families: resolved dotted names (glob `*` allowed; a name also
/// covers everything below it) and the rule they trigger.
pub(crate) const FAMILIES: &[(RuleId, &[&str])] = &[
    (
        RuleId::Process,
        &[
            "subprocess",
            "_posixsubprocess",
            "pty",
            "tty",
            "termios",
            "multiprocessing",
            "_multiprocessing",
            "signal",
            "_signal",
            "concurrent.futures.process",
            "concurrent.futures.ProcessPoolExecutor",
            "asyncio.subprocess",
            "asyncio.create_subprocess_*",
            "os.system",
            "os.popen",
            "os.exec*",
            "os.spawn*",
            "os.fork",
            "os.forkpty",
            "os.posix_spawn*",
            "os.kill",
            "os.killpg",
            "os.startfile",
            "os.plock",
            "os.register_at_fork",
            "os._exit",
            "posix",
            "nt",
            "platform.popen",
            "pexpect",
            "sh",
            "pandas.read_clipboard",
            "pandas.io.clipboard",
            "pandas.io.clipboards",
        ],
    ),
    (
        RuleId::Network,
        &[
            "socket",
            "_socket",
            "ssl",
            "_ssl",
            "urllib.request",
            "urllib.urlopen",
            "urllib3",
            "http.client",
            "http.server",
            "http.cookiejar",
            "requests",
            "httpx",
            "aiohttp",
            "ftplib",
            "smtplib",
            "telnetlib",
            "poplib",
            "imaplib",
            "nntplib",
            "xmlrpc",
            "socketserver",
            "webbrowser",
            "asyncio.open_connection",
            "asyncio.start_server",
            "asyncio.open_unix_connection",
        ],
    ),
    (
        RuleId::NativeCode,
        &[
            "ctypes",
            "_ctypes",
            "cffi",
            "numpy.ctypeslib",
            "numpy.f2py",
            "numpy.distutils",
            "numpy.testing._private.extbuild",
            "numpy.testing.extbuild",
            "distutils",
            "setuptools",
        ],
    ),
    (
        RuleId::UnsafeDeserialization,
        &[
            "pickle.load",
            "pickle.loads",
            "pickle.Unpickler",
            "_pickle",
            "cPickle",
            "marshal.load",
            "marshal.loads",
            "shelve",
            "dill",
            "cloudpickle",
            "joblib.load",
            "pandas.read_pickle",
            "copyreg",
        ],
    ),
    (
        RuleId::InterpreterState,
        &[
            "sys.modules",
            "sys.meta_path",
            "sys.path_hooks",
            "sys.path_importer_cache",
            "sys.path",
            "sys._getframe",
            "sys._current_frames",
            "sys.settrace",
            "sys.setprofile",
            "sys.addaudithook",
            "sys.breakpointhook",
            "sys.setrecursionlimit",
            "sys.remote_exec",
            "threading.settrace",
            "threading.setprofile",
        ],
    ),
    (
        RuleId::EvalExec,
        &[
            "builtins.eval",
            "builtins.exec",
            "builtins.compile",
            "code",
            "codeop",
            "types.CodeType",
            "types.FunctionType",
            "types.LambdaType",
            "timeit",
            "cProfile",
            "profile",
            "trace",
            "doctest",
            "logging.config",
            "pandas.eval",
            "typing.ForwardRef",
            "pydoc",
        ],
    ),
    (
        RuleId::DynamicImport,
        &[
            "builtins.__import__",
            "importlib",
            "imp",
            "runpy",
            "pkgutil",
            "zipimport",
        ],
    ),
    (
        RuleId::Reflection,
        &[
            "builtins.globals",
            "builtins.locals",
            "builtins.vars",
            "builtins.breakpoint",
            "builtins.help",
            "builtins.__build_class__",
            "gc",
            "inspect",
            "pdb",
            "bdb",
            "traceback.walk_stack",
            "traceback.walk_tb",
        ],
    ),
];

/// Builtins that, when referenced without being called directly, let code
/// reach attributes by computed names.
pub(crate) const ATTRIBUTE_FUNCTIONS: &[&str] = &[
    "builtins.getattr",
    "builtins.setattr",
    "builtins.delattr",
    "operator.attrgetter",
    "operator.methodcaller",
];

/// Attribute names denied on any object, because the receiver often cannot
/// be resolved statically (`[os][0].system`).
pub(crate) const DANGEROUS_ATTRIBUTES: &[&str] = &[
    "system",
    "popen",
    "popen2",
    "popen3",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "execv",
    "execve",
    "execvp",
    "execvpe",
    "spawnl",
    "spawnle",
    "spawnlp",
    "spawnlpe",
    "spawnv",
    "spawnve",
    "spawnvp",
    "spawnvpe",
    "posix_spawn",
    "posix_spawnp",
    "fork",
    "forkpty",
    "killpg",
    "Popen",
    "check_output",
    "check_call",
    "getoutput",
    "getstatusoutput",
    "create_subprocess_exec",
    "create_subprocess_shell",
    "load_module",
    "exec_module",
    "import_module",
    "_getframe",
    "settrace",
    "setprofile",
    "modules",
    "meta_path",
    "path_hooks",
    "f_globals",
    "f_locals",
    "f_builtins",
    "f_back",
    "f_code",
    "tb_frame",
    "tb_next",
    "gi_frame",
    "gi_code",
    "cr_frame",
    "cr_code",
    "ag_frame",
    "ag_code",
    "co_code",
    "CDLL",
    "PyDLL",
    "cdll",
    "pydll",
    "dlopen",
    "to_clipboard",
    "read_clipboard",
    "read_pickle",
    "_exit",
    "_get_executable_info",
    "subprocess_run_for_testing",
    "subprocess_run_helper",
    // modules reachable as attributes of other modules (`pd.io.common.os`)
    "os",
    "sys",
    "subprocess",
    "builtins",
    "importlib",
    "ctypes",
    "ctypeslib",
    "socket",
    "pty",
    "multiprocessing",
    "shutil",
    "marshal",
    "pickle",
    "posix",
    "_posixsubprocess",
];

/// Dunder attributes code may use; every other `__x__` attribute is a
/// `dunder-escape`. Defining dunder methods is always fine.
pub(crate) const SAFE_DUNDERS: &[&str] = &[
    "__name__",
    "__qualname__",
    "__doc__",
    "__module__",
    "__class__",
    "__version__",
    "__file__",
    "__all__",
    "__slots__",
    "__annotations__",
    "__dataclass_fields__",
    "__match_args__",
    "__main__",
    "__init__",
    "__post_init__",
    "__new__",
    "__repr__",
    "__str__",
    "__format__",
    "__bytes__",
    "__hash__",
    "__bool__",
    "__len__",
    "__length_hint__",
    "__iter__",
    "__next__",
    "__reversed__",
    "__contains__",
    "__getitem__",
    "__setitem__",
    "__delitem__",
    "__missing__",
    "__call__",
    "__enter__",
    "__exit__",
    "__aenter__",
    "__aexit__",
    "__aiter__",
    "__anext__",
    "__await__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__add__",
    "__sub__",
    "__mul__",
    "__matmul__",
    "__truediv__",
    "__floordiv__",
    "__mod__",
    "__divmod__",
    "__pow__",
    "__lshift__",
    "__rshift__",
    "__and__",
    "__xor__",
    "__or__",
    "__radd__",
    "__rsub__",
    "__rmul__",
    "__rmatmul__",
    "__rtruediv__",
    "__rfloordiv__",
    "__rmod__",
    "__rdivmod__",
    "__rpow__",
    "__rlshift__",
    "__rrshift__",
    "__rand__",
    "__rxor__",
    "__ror__",
    "__iadd__",
    "__isub__",
    "__imul__",
    "__itruediv__",
    "__ifloordiv__",
    "__imod__",
    "__ipow__",
    "__neg__",
    "__pos__",
    "__abs__",
    "__invert__",
    "__complex__",
    "__int__",
    "__float__",
    "__index__",
    "__round__",
    "__trunc__",
    "__floor__",
    "__ceil__",
    "__sizeof__",
    "__array__",
    "__array_ufunc__",
    "__array_function__",
    "__fspath__",
    "__copy__",
    "__deepcopy__",
    "__set_name__",
    "__get__",
    "__set__",
    "__delete__",
    "__init_subclass__",
    "__class_getitem__",
    "__debug__",
    "__future__",
    "__type_params__",
];

/// Dunder *names* (not attributes) that are harmless to reference.
pub(crate) const SAFE_DUNDER_NAMES: &[&str] = &[
    "__name__",
    "__file__",
    "__doc__",
    "__debug__",
    "__annotations__",
    "__class__",
    "__qualname__",
    "__module__",
    "__all__",
    "__slots__",
    "__version__",
    "__author__",
    "__match_args__",
    "__type_params__",
];

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
pub(crate) fn covers(pattern: &str, name: &str) -> bool {
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
pub(crate) fn allows(pattern: &str, name: &str) -> bool {
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

    #[test]
    fn rule_ids_round_trip_through_serde() {
        for r in RuleId::ALL {
            let j = serde_json::to_string(r).unwrap();
            assert_eq!(j, format!("\"{}\"", r.as_str()));
        }
    }
}
