//! The built-in families: for each family rule, the dotted names it denies,
//! declared once.
//!
//! A family's names are resolved dotted names (glob `*` allowed; a name also
//! covers everything below it). Its whole modules are also what the default
//! policy lists in `code.deny_modules`, together with the modules only the
//! default denies (`default_deny`), so every module of a family is written
//! here and nowhere else: the default list is made from these
//! ([`default_deny_modules`]) and `policies/default.yml` is held to it by a
//! test.

use super::rules::RuleId;

/// One family: a rule, why it is denied, and what it denies.
#[derive(Debug)]
pub(crate) struct Family {
    /// The rule its findings carry.
    pub(crate) rule: RuleId,
    /// Why the family is denied, said in every finding.
    pub(crate) why: &'static str,
    /// Whole modules the family denies; the default policy also lists them
    /// in `code.deny_modules`, so the sandbox's runner refuses them at run
    /// time too.
    modules: &'static [&'static str],
    /// Further names the family denies: members of modules code may import
    /// (`os.system`), and modules the default `deny_modules` leaves out.
    names: &'static [&'static str],
    /// Modules of the same concern the default policy denies as a whole
    /// (`import-denied`) though the family does not: a policy may allow them.
    default_deny: &'static [&'static str],
}

impl Family {
    /// Every name the family denies.
    pub(crate) fn patterns(&self) -> impl Iterator<Item = &'static str> + use<> {
        self.modules.iter().chain(self.names).copied()
    }
}

/// Every family, in the order patterns are matched.
pub(crate) const FAMILIES: &[Family] = &[
    PROCESS,
    NETWORK,
    NATIVE_CODE,
    UNSAFE_DESERIALIZATION,
    INTERPRETER_STATE,
    EVAL_EXEC,
    DYNAMIC_IMPORT,
    REFLECTION,
    DYNAMIC_ATTRIBUTE,
];

/// The default `code.deny_modules`: each family's whole modules, then the
/// modules only the default denies, family by family.
pub(crate) fn default_deny_modules() -> Vec<String> {
    FAMILIES
        .iter()
        .flat_map(|f| f.modules.iter().chain(f.default_deny))
        .map(|m| m.to_string())
        .collect()
}

const PROCESS: Family = Family {
    rule: RuleId::Process,
    why: "starting processes or sending signals is not allowed; compute the result in Python",
    modules: &[
        "subprocess",
        "_posixsubprocess",
        "pty",
        "tty",
        "termios",
        "multiprocessing",
        "_multiprocessing",
        "concurrent.futures.process",
        "signal",
        "_signal",
        "posix",
        "nt",
    ],
    names: &[
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
        "platform.popen",
        "pexpect",
        "sh",
        "pandas.read_clipboard",
        "pandas.io.clipboard",
        "pandas.io.clipboards",
        // Libraries' helpers that run programs: matplotlib's test helpers
        // (`subprocess_run_for_testing`, `ipython_in_subprocess`), TeX and
        // dvi tools, statsmodels' X-13 wrapper.
        "matplotlib.testing",
        "matplotlib.texmanager",
        "matplotlib.dviread",
        "statsmodels.tsa.x13",
    ],
    default_deny: &["fcntl", "resource"],
};

const NETWORK: Family = Family {
    rule: RuleId::Network,
    why: "the sandbox has no network; pass data as inputs instead of fetching it",
    modules: &[
        "socket",
        "_socket",
        "ssl",
        "urllib3",
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
    ],
    names: &[
        "_ssl",
        "urllib.request",
        "urllib.urlopen",
        "http.client",
        "http.server",
        "http.cookiejar",
        "asyncio.open_connection",
        "asyncio.start_server",
        "asyncio.open_unix_connection",
    ],
    default_deny: &["select", "selectors", "asyncio", "urllib", "http"],
};

const NATIVE_CODE: Family = Family {
    rule: RuleId::NativeCode,
    why: "loading native code bypasses every Python-level check",
    modules: &["ctypes", "_ctypes", "cffi"],
    names: &[
        "numpy.ctypeslib",
        "numpy.f2py",
        "numpy.distutils",
        "numpy.testing._private.extbuild",
        "numpy.testing.extbuild",
        "distutils",
        "setuptools",
    ],
    default_deny: &["mmap"],
};

const UNSAFE_DESERIALIZATION: Family = Family {
    rule: RuleId::UnsafeDeserialization,
    why: "unpickling runs code chosen by whoever wrote the data; use CSV, JSON or numpy.save/np.load without pickle",
    modules: &["_pickle", "shelve", "dill", "cloudpickle"],
    names: &[
        "pickle.load",
        "pickle.loads",
        "pickle.Unpickler",
        "cPickle",
        "marshal.load",
        "marshal.loads",
        "joblib.load",
        "pandas.read_pickle",
        "copyreg",
        // The libraries' own loaders that unpickle.
        "pandas.io.pickle",
        "pandas.compat.pickle_compat",
        "statsmodels.api.load",
        "statsmodels.api.load_pickle",
        "statsmodels.iolib.smpickle",
        "statsmodels.iolib.load_pickle",
        "statsmodels.iolib.api.load_pickle",
        "statsmodels.*Results.load",
        "statsmodels.*ResultsWrapper.load",
    ],
    default_deny: &["pickle", "marshal", "joblib"],
};

const INTERPRETER_STATE: Family = Family {
    rule: RuleId::InterpreterState,
    why: "changing or inspecting interpreter state (modules, frames, hooks) can undo the sandbox's checks",
    modules: &[],
    names: &[
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
    default_deny: &[],
};

const EVAL_EXEC: Family = Family {
    rule: RuleId::EvalExec,
    why: "running code built at run time hides it from the check; write the code directly",
    modules: &["code", "codeop"],
    names: &[
        "builtins.eval",
        "builtins.exec",
        "builtins.compile",
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
    default_deny: &[],
};

const DYNAMIC_IMPORT: Family = Family {
    rule: RuleId::DynamicImport,
    why: "imports must be written as `import x` statements so the policy can check them",
    modules: &["importlib", "imp", "runpy", "pkgutil", "zipimport"],
    names: &["builtins.__import__"],
    default_deny: &[],
};

const REFLECTION: Family = Family {
    rule: RuleId::Reflection,
    why: "namespace and debugger access lets code reach anything; use variables directly",
    modules: &["gc", "inspect", "pdb", "bdb"],
    names: &[
        "builtins.globals",
        "builtins.locals",
        "builtins.vars",
        "builtins.breakpoint",
        "builtins.help",
        "builtins.__build_class__",
        "traceback.walk_stack",
        "traceback.walk_tb",
    ],
    default_deny: &["builtins"],
};

const DYNAMIC_ATTRIBUTE: Family = Family {
    rule: RuleId::DynamicAttribute,
    why: "it reaches attributes by names written in strings (`get_field(\"0.system\", [os], {})`), which the check cannot follow; write the attribute (`obj.name`) or an f-string",
    modules: &[],
    names: &["string.Formatter"],
    default_deny: &[],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_family_has_its_own_rule_and_each_name_is_written_once() {
        let mut rules: Vec<RuleId> = FAMILIES.iter().map(|f| f.rule).collect();
        rules.sort();
        rules.dedup();
        assert_eq!(rules.len(), FAMILIES.len());
        let mut all: Vec<&str> = FAMILIES
            .iter()
            .flat_map(|f| f.patterns().chain(f.default_deny.iter().copied()))
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "a name is declared twice");
    }

    #[test]
    fn the_default_deny_list_holds_every_family_module_and_only_whole_modules() {
        let deny = default_deny_modules();
        for f in FAMILIES {
            for m in f.modules {
                assert!(deny.iter().any(|d| d == m), "{m}");
            }
        }
        assert!(deny.iter().all(|m| !m.contains('*')));
        assert!(deny.iter().any(|m| m == "asyncio") && deny.iter().any(|m| m == "socket"));
    }
}
