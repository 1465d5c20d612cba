//! The built-in default policy's lists (`policies/default.yml` holds the
//! same, held equal by a test). The default `code.deny_modules` is made from
//! the families (`families::default_deny_modules`), where each module is
//! declared once.

pub(super) fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The default import allowlist (data analysis). Kept in sync with
/// `policies/default.yml` by a test.
pub(super) const DEFAULT_ALLOW_IMPORTS: &[&str] = &[
    "pandas.*",
    "numpy.*",
    "matplotlib.*",
    "duckdb.*",
    "fastparquet.*",
    "openpyxl.*",
    "scipy.*",
    "statsmodels.*",
    "sklearn.*",
    "seaborn.*",
    "math",
    "cmath",
    "statistics",
    "decimal",
    "fractions",
    "numbers",
    "random",
    "json",
    "csv",
    "gzip",
    "base64",
    "struct",
    "hashlib",
    "datetime",
    "zoneinfo",
    "calendar",
    "time",
    "collections.*",
    "itertools",
    "functools",
    "operator",
    "heapq",
    "bisect",
    "array",
    "copy",
    "re",
    "string",
    "textwrap",
    "unicodedata",
    "difflib",
    "pprint",
    "typing",
    "dataclasses",
    "enum",
    "abc",
    "contextlib",
    "warnings",
    "__future__",
    "io",
    "os",
    "os.path",
    "glob",
    "fnmatch",
    "sys",
];

/// The default list of denied calls (beyond the built-in families, which
/// cannot be switched off): file-system and environment changes through `os`.
pub(super) const DEFAULT_DENY_CALLS: &[&str] = &[
    "os.remove",
    "os.unlink",
    "os.rmdir",
    "os.removedirs",
    "os.rename",
    "os.renames",
    "os.replace",
    "os.chmod",
    "os.chown",
    "os.lchown",
    "os.link",
    "os.symlink",
    "os.mkfifo",
    "os.mknod",
    "os.chroot",
    "os.set*",
    "os.putenv",
    "os.unsetenv",
    "os.open",
    "os.fdopen",
    "os.write",
    "os.dup",
    "os.dup2",
    "os.pipe",
    "os.memfd_create",
    "os.truncate",
    "os.ftruncate",
    "numpy.f2py",
    "numpy.distutils",
    "pandas.read_clipboard",
];

/// The default `inputs.allow`: data files anywhere in the workspace (text
/// formats, Parquet and Excel workbooks).
pub(super) const DEFAULT_INPUT_GLOBS: &[&str] = &[
    "**/*.csv",
    "**/*.json",
    "**/*.jsonl",
    "**/*.tsv",
    "**/*.txt",
    "**/*.log",
    "**/*.parquet",
    "**/*.xlsx",
];
