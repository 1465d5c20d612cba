//! Names the checker treats specially: attribute functions, attributes
//! denied on any object, the dunders code may use, and finding dunders in
//! strings.

/// Builtins that, when referenced without being called directly, let code
/// reach attributes by computed names.
pub(super) const ATTRIBUTE_FUNCTIONS: &[&str] = &[
    "builtins.getattr",
    "builtins.setattr",
    "builtins.delattr",
    "operator.attrgetter",
    "operator.methodcaller",
];

/// `os` functions that act on file descriptors, with how many leading
/// arguments are descriptors: each must be `f.fileno()` of a file the code
/// opened (see `calls`).
pub(super) const DESCRIPTOR_FUNCTIONS: &[(&str, usize)] = &[
    ("os.close", 1),
    ("os.closerange", 2),
    ("os.dup", 1),
    ("os.dup2", 2),
    ("os.read", 1),
    ("os.readv", 1),
    ("os.pread", 1),
    ("os.preadv", 1),
    ("os.write", 1),
    ("os.writev", 1),
    ("os.pwrite", 1),
    ("os.pwritev", 1),
    ("os.sendfile", 2),
    ("os.splice", 2),
    ("os.copy_file_range", 2),
    ("os.lseek", 1),
    ("os.fsync", 1),
    ("os.fdatasync", 1),
    ("os.ftruncate", 1),
    ("os.fchmod", 1),
    ("os.fchown", 1),
    ("os.fchdir", 1),
    ("os.fstat", 1),
    ("os.fstatvfs", 1),
    ("os.fpathconf", 1),
    ("os.lockf", 1),
    ("os.posix_fallocate", 1),
    ("os.posix_fadvise", 1),
    ("os.set_blocking", 1),
    ("os.get_blocking", 1),
    ("os.set_inheritable", 1),
    ("os.get_inheritable", 1),
    ("os.tcgetpgrp", 1),
    ("os.tcsetpgrp", 1),
    ("os.ttyname", 1),
    ("os.isatty", 1),
    ("os.device_encoding", 1),
    ("os.login_tty", 1),
    ("os.fdopen", 1),
    ("os.get_terminal_size", 1),
    ("os.eventfd_read", 1),
    ("os.eventfd_write", 1),
];

/// Attribute names denied on any object, because the receiver often cannot
/// be resolved statically (`[os][0].system`).
pub(super) const DANGEROUS_ATTRIBUTES: &[&str] = &[
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
    // a native library handle (threadpoolctl's controllers), a field walk
    // by name (`string.Formatter`), pandas' importer of optional modules
    "dynlib",
    "get_field",
    "import_optional_dependency",
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
pub(super) const SAFE_DUNDERS: &[&str] = &[
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
pub(super) const SAFE_DUNDER_NAMES: &[&str] = &[
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

pub(super) fn is_dunder(name: &str) -> bool {
    name.len() > 4 && name.starts_with("__") && name.ends_with("__")
}

/// A private name: a leading `_`, not a dunder (`_libs`, `__x` mangled).
pub(super) fn is_private(name: &str) -> bool {
    name.starts_with('_') && name.len() > 1 && !is_dunder(name)
}

/// Whether the resolved name `q` is one of [`DESCRIPTOR_FUNCTIONS`].
pub(super) fn is_descriptor_function(q: &str) -> bool {
    descriptor_args(q).is_some()
}

/// How many leading arguments of `q` are descriptors, when `q` is one of
/// [`DESCRIPTOR_FUNCTIONS`] (also as `posix.x`).
pub(super) fn descriptor_args(q: &str) -> Option<usize> {
    let name = q.strip_prefix("os.").or_else(|| q.strip_prefix("posix."))?;
    DESCRIPTOR_FUNCTIONS
        .iter()
        .find(|(f, _)| f.strip_prefix("os.") == Some(name))
        .map(|(_, n)| *n)
}

/// Every `__word__` inside a string.
pub(super) fn dunders_in(text: &str) -> Vec<&str> {
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
}
