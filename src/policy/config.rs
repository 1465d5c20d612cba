//! The YAML policy file: who may run what, with which limits.
//!
//! Read with [serde-saphyr](https://crates.io/crates/serde-saphyr): pure Rust,
//! `#![forbid(unsafe_code)]`, maintained, rejects duplicate keys and reports
//! line and column for every error (`serde_yaml` is deprecated and archived).
//! Every struct denies unknown keys and every field has a safe default, so an
//! empty file is the default policy.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::rules::RuleId;
use crate::sandbox::{DEFAULT_IMAGE, DEFAULT_PRELOAD, Limits, Runtime, RuntimeRules};
use crate::units::{ByteSize, human_duration};

/// The largest `code.max_bytes` a policy may set. Bigger scripts are not
/// data analysis, and the checker's cost grows with the size.
pub(crate) const MAX_CODE_BYTES_LIMIT: ByteSize = ByteSize::mib(1);

/// The most generate/repair attempts a policy may allow.
const MAX_ATTEMPTS: u8 = 10;

/// Why a policy file could not be used, with where in the file.
///
/// Displayed as `file:line:column: message` (or `file: message` when the
/// problem has no position, e.g. the file cannot be read).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct PolicyError {
    /// The policy file (or the origin given to [`Policy::from_yaml_str`]).
    pub file: String,
    /// 1-based line, 0 when unknown.
    pub line: u64,
    /// 1-based column, 0 when unknown.
    pub column: u64,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.column, self.message
            )
        }
    }
}

impl PolicyError {
    fn at(file: &str, line: u64, column: u64, message: impl Into<String>) -> Self {
        PolicyError {
            file: file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    fn from_yaml(file: &str, err: &serde_saphyr::Error) -> Self {
        use serde_saphyr::MessageFormatter;
        let inner = err.without_snippet();
        let (line, column) = inner
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        let raw = serde_saphyr::UserMessageFormatter
            .format_message(inner)
            .into_owned();
        let message = add_hint(&raw);
        PolicyError::at(file, line, column, message)
    }
}

/// Adds a "write this instead" hint to serde's generic messages.
fn add_hint(raw: &str) -> String {
    let raw = raw.trim().to_string();
    if raw.contains("unknown field") {
        format!(
            "{raw}; remove the key or fix its spelling (unknown keys are errors so typos cannot weaken the policy)"
        )
    } else if raw.contains("duplicate") {
        format!("{raw}; each key may appear once — delete one of them")
    } else if raw.contains("invalid type") {
        format!("{raw}; see policies/default.yml for the expected form of every field")
    } else {
        raw
    }
}

/// A user's permission on a repository (GitHub's levels), weakest first so
/// `>=` compares. The one permission type: the policy's minimums and what
/// the GitHub API answers.
///
/// `None` (no access, what GitHub answers for a non-collaborator) is a level
/// a user can have but not one a policy can ask for: `min_permission: none`
/// is refused when the policy is read (it would let anyone run code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// No access.
    #[serde(skip_deserializing)]
    None,
    /// Can read the repository.
    Read,
    /// Can manage issues and pull requests without write access.
    Triage,
    /// Can push to the repository.
    Write,
    /// Can manage the repository without access to sensitive actions.
    Maintain,
    /// Full access.
    Admin,
}

impl Permission {
    /// All values, lowest first.
    pub const ALL: [Permission; 6] = [
        Permission::None,
        Permission::Read,
        Permission::Triage,
        Permission::Write,
        Permission::Maintain,
        Permission::Admin,
    ];

    /// The name GitHub uses (`admin`, `maintain`, `write`, `triage`, `read`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::None => "none",
            Permission::Read => "read",
            Permission::Triage => "triage",
            Permission::Write => "write",
            Permission::Maintain => "maintain",
            Permission::Admin => "admin",
        }
    }
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Permission {
    type Err = String;

    /// Accepts GitHub's names (case-insensitive); `pull` / `push` as the legacy aliases.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "none" => Permission::None,
            "read" | "pull" => Permission::Read,
            "triage" => Permission::Triage,
            "write" | "push" => Permission::Write,
            "maintain" => Permission::Maintain,
            "admin" => Permission::Admin,
            other => {
                return Err(format!(
                    "`{other}` is not a permission; use one of none, read, triage, write, maintain, admin"
                ));
            }
        })
    }
}

/// `who`: who may trigger runs (used by the GitHub front end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Who {
    /// GitHub logins allowed to trigger runs; empty means anyone who has
    /// `min_permission` on the repository.
    pub(crate) users: Vec<String>,
    /// The weakest repository permission that may trigger runs.
    pub min_permission: Permission,
    /// Whether bot accounts (`[bot]` logins, `type: Bot`) may trigger runs.
    pub allow_bots: bool,
    /// Whether an edited comment may trigger a run (off: an edit could swap
    /// the question after someone reviewed it).
    pub allow_edited_comments: bool,
}

impl Default for Who {
    fn default() -> Self {
        Who {
            users: Vec::new(),
            min_permission: Permission::Write,
            allow_bots: false,
            allow_edited_comments: false,
        }
    }
}

/// Why the policy does not let someone do something: the one reason both
/// the decision and the reply are made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A bot account, and the policy does not allow bots (`who.allow_bots`).
    Bot {
        /// The login.
        login: String,
    },
    /// An edited comment, and the policy does not allow them
    /// (`who.allow_edited_comments`).
    Edited,
    /// The policy lists logins and this one is not among them.
    NotListed {
        /// The login.
        login: String,
        /// The list: `who.users` or `escalation.approvers`.
        field: &'static str,
    },
    /// The permission on the repository is below the policy's minimum.
    BelowMinimum {
        /// The login.
        login: String,
        /// What they have.
        has: Permission,
        /// What the policy needs.
        needs: Permission,
        /// The setting: `who.min_permission` or `escalation.min_permission`.
        field: &'static str,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Bot { login } => write!(
                f,
                "`{login}` is a bot account; the policy does not let bots trigger runs (who.allow_bots)"
            ),
            Refusal::Edited => f.write_str(
                "edited comments do not trigger runs (who.allow_edited_comments); post a new comment",
            ),
            Refusal::NotListed { login, field } => {
                write!(f, "`{login}` is not in the policy's list ({field})")
            }
            Refusal::BelowMinimum {
                login,
                has,
                needs,
                field,
            } => write!(
                f,
                "`{login}` has {has} permission; the policy needs at least {needs} ({field})"
            ),
        }
    }
}

/// `permission` against a policy's minimum: no access (`None`) is never enough.
fn meets(permission: Permission, min: Permission) -> bool {
    permission != Permission::None && permission >= min
}

fn listed(list: &[String], login: &str) -> bool {
    list.is_empty() || list.iter().any(|u| u.eq_ignore_ascii_case(login))
}

impl Who {
    /// Whether `login` (with `permission` on the repository) may trigger a
    /// run; `Err` says why not (its `Display` is fit for a reply). Logins
    /// compare case-insensitively, as on GitHub.
    pub fn permits(
        &self,
        login: &str,
        permission: Permission,
        is_bot: bool,
        edited: bool,
    ) -> Result<(), Refusal> {
        if is_bot && !self.allow_bots {
            return Err(Refusal::Bot {
                login: login.to_string(),
            });
        }
        if edited && !self.allow_edited_comments {
            return Err(Refusal::Edited);
        }
        if !listed(&self.users, login) {
            return Err(Refusal::NotListed {
                login: login.to_string(),
                field: "who.users",
            });
        }
        if !meets(permission, self.min_permission) {
            return Err(Refusal::BelowMinimum {
                login: login.to_string(),
                has: permission,
                needs: self.min_permission,
                field: "who.min_permission",
            });
        }
        Ok(())
    }
}

/// The network mode of the sandbox. Only `none` exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Network {
    /// No network interface besides loopback.
    #[default]
    None,
}

impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("none")
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == "none" {
            Ok(Network::None)
        } else {
            Err(de::Error::custom(format!(
                "network `{s}` is not supported: only `none` is accepted, because code with network \
                 access could send the workspace's data out or fetch code that was never checked; \
                 write `network: none` and pass data as inputs"
            )))
        }
    }
}

/// `sandbox`: the container the code runs in: the image, the resource
/// [`Limits`] (the same type the sandbox enforces; its field names are the
/// keys of this section), the network and runtime, and what to preload.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxPolicy {
    /// Image reference (tag or `name@sha256:...` digest).
    pub(crate) image: String,
    /// The limits, with these ranges checked on reading: `timeout` 100ms..=10m,
    /// `memory` 16MiB..=16GiB, `cpus` above 0 and at most 64, `pids` 1..=4096.
    /// `data_max_bytes` is not a key of this section: /data holds the inputs,
    /// so [`Policy::limits`] takes its size from `inputs.max_total_bytes`.
    limits: Limits,
    /// Network mode; only `none` is accepted.
    network: Network,
    /// OCI runtime: `runc` (default, with compute-bot's seccomp allowlist)
    /// or `runsc` (gVisor; see `scripts/install-gvisor`).
    pub(crate) runtime: Runtime,
    /// Modules imported while the container waits for the code (default
    /// pandas, numpy, matplotlib.pyplot; `[]` for none). Dotted names only.
    pub(crate) preload: Vec<String>,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            image: DEFAULT_IMAGE.to_string(),
            limits: Limits::default(),
            network: Network::None,
            runtime: Runtime::Runc,
            preload: DEFAULT_PRELOAD.iter().map(|m| m.to_string()).collect(),
        }
    }
}

/// The keys of the `sandbox` section, in the order they are written.
const SANDBOX_KEYS: &[&str] = &[
    "image",
    "timeout",
    "memory",
    "cpus",
    "pids",
    "stdout_cap",
    "stderr_cap",
    "tmpfs",
    "artifacts_max_files",
    "artifacts_max_bytes",
    "nofile",
    "fsize",
    "network",
    "runtime",
    "preload",
];

impl Serialize for SandboxPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let l = &self.limits;
        let mut m = s.serialize_struct("SandboxPolicy", SANDBOX_KEYS.len())?;
        m.serialize_field("image", &self.image)?;
        m.serialize_field("timeout", &crate::units::format_duration(l.timeout))?;
        m.serialize_field("memory", &l.memory)?;
        m.serialize_field("cpus", &l.cpus)?;
        m.serialize_field("pids", &l.pids)?;
        m.serialize_field("stdout_cap", &l.stdout_cap)?;
        m.serialize_field("stderr_cap", &l.stderr_cap)?;
        m.serialize_field("tmpfs", &l.tmpfs)?;
        m.serialize_field("artifacts_max_files", &l.artifacts_max_files)?;
        m.serialize_field("artifacts_max_bytes", &l.artifacts_max_bytes)?;
        m.serialize_field("nofile", &l.nofile)?;
        m.serialize_field("fsize", &l.fsize)?;
        m.serialize_field("network", &self.network)?;
        m.serialize_field("runtime", &self.runtime)?;
        m.serialize_field("preload", &self.preload)?;
        m.end()
    }
}

/// Reads the section key by key into the defaults, so each value's own
/// errors keep their `line:column` and unknown or repeated keys are errors
/// (serde's `flatten` would lose both).
impl<'de> Deserialize<'de> for SandboxPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Section;
        impl<'de> de::Visitor<'de> for Section {
            type Value = SandboxPolicy;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the sandbox section (a mapping such as `timeout: 10s`)")
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<SandboxPolicy, A::Error> {
                let mut s = SandboxPolicy::default();
                // Repeated keys are refused by the YAML reader itself.
                while let Some(key) = map.next_key::<String>()? {
                    let l = &mut s.limits;
                    match key.as_str() {
                        "image" => s.image = map.next_value::<Image>()?.0,
                        "timeout" => l.timeout = map.next_value::<Timeout>()?.0,
                        "memory" => l.memory = map.next_value::<Memory>()?.0,
                        "cpus" => l.cpus = map.next_value::<Cpus>()?.0,
                        "pids" => l.pids = map.next_value::<Pids>()?.0,
                        "stdout_cap" => l.stdout_cap = map.next_value()?,
                        "stderr_cap" => l.stderr_cap = map.next_value()?,
                        "tmpfs" => l.tmpfs = map.next_value()?,
                        "artifacts_max_files" => l.artifacts_max_files = map.next_value()?,
                        "artifacts_max_bytes" => l.artifacts_max_bytes = map.next_value()?,
                        "nofile" => l.nofile = map.next_value()?,
                        "fsize" => l.fsize = map.next_value()?,
                        "network" => s.network = map.next_value()?,
                        "runtime" => s.runtime = map.next_value()?,
                        "preload" => s.preload = map.next_value::<Preload>()?.0,
                        "data_max_bytes" => {
                            return Err(de::Error::custom(
                                "`data_max_bytes` is not a sandbox key: /data holds the inputs, so its size is \
                                 `inputs.max_total_bytes`; set that instead",
                            ));
                        }
                        other => return Err(de::Error::unknown_field(other, SANDBOX_KEYS)),
                    }
                }
                Ok(s)
            }
        }
        d.deserialize_struct("SandboxPolicy", SANDBOX_KEYS, Section)
    }
}

/// `sandbox.image`: a reference without blanks.
struct Image(String);

impl<'de> Deserialize<'de> for Image {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.trim().is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(de::Error::custom(format!(
                "image `{s}` is not an image reference; write a tag like `{DEFAULT_IMAGE}` or a digest `name@sha256:...`"
            )));
        }
        Ok(Image(s))
    }
}

/// `sandbox.timeout`: `10s`, `1500ms`, `2m` or a number of seconds; 100ms..=10m.
struct Timeout(Duration);

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = human_duration::deserialize(d)?;
        if !(Duration::from_millis(100)..=Duration::from_secs(600)).contains(&t) {
            return Err(de::Error::custom(format!(
                "timeout `{}` is out of range; write a duration from 100ms to 10m, e.g. `10s`",
                crate::units::format_duration(t)
            )));
        }
        Ok(Timeout(t))
    }
}

/// `sandbox.memory`: a size, 16MiB..=16GiB.
struct Memory(ByteSize);

impl<'de> Deserialize<'de> for Memory {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = ByteSize::deserialize(d)?;
        if !(ByteSize::mib(16)..=ByteSize::mib(16 * 1024)).contains(&m) {
            return Err(de::Error::custom(format!(
                "memory `{m}` is out of range; write a size from 16MiB to 16GiB, e.g. `256MiB`"
            )));
        }
        Ok(Memory(m))
    }
}

/// `sandbox.cpus`: cores, above 0 and at most 64.
struct Cpus(f64);

impl<'de> Deserialize<'de> for Cpus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if !(v > 0.0 && v <= 64.0) {
            return Err(de::Error::custom(format!(
                "cpus `{v}` is out of range; write a number of cores greater than 0 and at most 64, e.g. `1` or `0.5`"
            )));
        }
        Ok(Cpus(v))
    }
}

/// `sandbox.pids`: 1..=4096.
struct Pids(i64);

impl<'de> Deserialize<'de> for Pids {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = i64::deserialize(d)?;
        if !(1..=4096).contains(&v) {
            return Err(de::Error::custom(format!(
                "pids `{v}` is out of range; write a number from 1 to 4096, e.g. `64`"
            )));
        }
        Ok(Pids(v))
    }
}

/// `sandbox.preload`: dotted module names.
struct Preload(Vec<String>);

impl<'de> Deserialize<'de> for Preload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<String>::deserialize(d)?;
        for m in &v {
            let ok = !m.is_empty()
                && m.split('.').all(|p| {
                    p.chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                        && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                });
            if !ok {
                return Err(de::Error::custom(format!(
                    "preload `{m}` is not a module name; write dotted names such as `pandas` or `matplotlib.pyplot`"
                )));
            }
        }
        Ok(Preload(v))
    }
}

/// `inputs`: which workspace files may be handed to the code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Inputs {
    /// Glob allowlist of workspace-relative paths (`**/*.csv`).
    #[serde(deserialize_with = "de_globs")]
    pub(crate) allow: Vec<String>,
    /// Largest single input file.
    pub max_file_bytes: ByteSize,
    /// Largest total of all input files of one run.
    pub max_total_bytes: ByteSize,
}

impl Default for Inputs {
    fn default() -> Self {
        Inputs {
            allow: [
                "**/*.csv",
                "**/*.json",
                "**/*.jsonl",
                "**/*.tsv",
                "**/*.txt",
                "**/*.log",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            max_file_bytes: ByteSize::mib(16),
            max_total_bytes: ByteSize::mib(64),
        }
    }
}

impl Inputs {
    /// True when the workspace-relative `path` matches one of the `allow`
    /// globs. Paths with `..` components or absolute paths never match.
    pub fn is_allowed(&self, path: &str) -> bool {
        let p = Path::new(path);
        if p.is_absolute()
            || p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return false;
        }
        let mut b = globset::GlobSetBuilder::new();
        for g in &self.allow {
            if let Ok(glob) = globset::GlobBuilder::new(g).literal_separator(true).build() {
                b.add(glob);
            }
        }
        b.build().map(|s| s.is_match(p)).unwrap_or(false)
    }
}

fn de_globs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for g in &v {
        if let Err(e) = globset::GlobBuilder::new(g).literal_separator(true).build() {
            return Err(de::Error::custom(format!(
                "`{g}` is not a valid glob ({e}); write e.g. `data/**/*.csv`"
            )));
        }
    }
    Ok(v)
}

/// The language of the code. Only Python exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Language {
    /// Python 3.
    #[default]
    Python,
}

/// `code`: what the code may contain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodePolicy {
    /// The code's language; only `python`.
    language: Language,
    /// Largest accepted script, at most 1MiB.
    #[serde(deserialize_with = "de_max_bytes")]
    pub max_bytes: ByteSize,
    /// Modules the code may import: `name` allows exactly that module,
    /// `pkg.*` allows `pkg` and every submodule.
    #[serde(deserialize_with = "de_allow_imports")]
    pub allow_imports: Vec<String>,
    /// Modules that are always denied, with all their submodules, even when
    /// unknown imports escalate. Their top-level names also go to the
    /// in-sandbox runner (see [`Policy::runtime_rules`]).
    #[serde(deserialize_with = "de_module_patterns")]
    pub deny_modules: Vec<String>,
    /// Calls and attributes that are denied, as resolved dotted names
    /// (`os.remove`, `os.exec*`); a bare name is a builtin (`input`).
    #[serde(deserialize_with = "de_call_patterns")]
    pub(crate) deny_calls: Vec<String>,
    /// Rule ids whose findings escalate to a human instead of denying.
    #[serde(deserialize_with = "de_escalate")]
    pub escalate: Vec<RuleId>,
    /// Shorthand for listing `import-not-allowed` in `escalate`.
    pub escalate_unknown_imports: bool,
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The default import allowlist (data analysis). Kept in sync with
/// `policies/default.yml` by a test.
const DEFAULT_ALLOW_IMPORTS: &[&str] = &[
    "pandas.*",
    "numpy.*",
    "matplotlib.*",
    "duckdb.*",
    "fastparquet.*",
    "openpyxl.*",
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

/// The default list of always-denied modules.
const DEFAULT_DENY_MODULES: &[&str] = &[
    "ctypes",
    "_ctypes",
    "cffi",
    "socket",
    "_socket",
    "ssl",
    "select",
    "selectors",
    "asyncio",
    "urllib",
    "urllib3",
    "http",
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
    "subprocess",
    "_posixsubprocess",
    "pty",
    "tty",
    "termios",
    "fcntl",
    "resource",
    "multiprocessing",
    "_multiprocessing",
    "concurrent.futures.process",
    "signal",
    "_signal",
    "posix",
    "nt",
    "pickle",
    "_pickle",
    "marshal",
    "shelve",
    "dill",
    "cloudpickle",
    "joblib",
    "importlib",
    "imp",
    "runpy",
    "pkgutil",
    "zipimport",
    "code",
    "codeop",
    "pdb",
    "bdb",
    "builtins",
    "gc",
    "inspect",
    "mmap",
];

/// The default list of denied calls (beyond the built-in families, which
/// cannot be switched off): file-system and environment changes through `os`.
const DEFAULT_DENY_CALLS: &[&str] = &[
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

impl Default for CodePolicy {
    fn default() -> Self {
        CodePolicy {
            language: Language::Python,
            max_bytes: ByteSize::kib(64),
            allow_imports: strs(DEFAULT_ALLOW_IMPORTS),
            deny_modules: strs(DEFAULT_DENY_MODULES),
            deny_calls: strs(DEFAULT_DENY_CALLS),
            escalate: Vec::new(),
            escalate_unknown_imports: false,
        }
    }
}

impl CodePolicy {
    /// True when findings of `rule` escalate instead of denying.
    pub fn escalates(&self, rule: RuleId) -> bool {
        (self.escalate_unknown_imports && rule == RuleId::ImportNotAllowed)
            || self.escalate.contains(&rule)
    }
}

fn de_max_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<ByteSize, D::Error> {
    let v = ByteSize::deserialize(d)?;
    if v.bytes() == 0 || v > MAX_CODE_BYTES_LIMIT {
        return Err(de::Error::custom(format!(
            "max_bytes `{v}` is out of range; write a size above 0 and at most {MAX_CODE_BYTES_LIMIT}, e.g. `64KiB`"
        )));
    }
    Ok(v)
}

fn is_dotted_name(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|part| {
            let mut cs = part.chars();
            matches!(cs.next(), Some(c) if c == '_' || c.is_alphabetic())
                && cs.all(|c| c == '_' || c.is_alphanumeric())
        })
}

fn valid_module_pattern(s: &str) -> bool {
    is_dotted_name(s.strip_suffix(".*").unwrap_or(s))
}

fn de_allow_imports<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for p in &v {
        if p == "*" || p == ".*" {
            return Err(de::Error::custom(
                "`*` would allow every module, which makes the allowlist meaningless; list the modules \
                 (`pandas.*`, `math`) and set `escalate_unknown_imports: true` to let a human approve others",
            ));
        }
        if !valid_module_pattern(p) {
            return Err(de::Error::custom(format!(
                "`{p}` is not a module pattern; write a dotted module name (`json`, `os.path`) or `pkg.*` for a package and its submodules"
            )));
        }
    }
    Ok(v)
}

fn de_module_patterns<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for p in &v {
        if !valid_module_pattern(p) {
            return Err(de::Error::custom(format!(
                "`{p}` is not a module name; write a dotted module name such as `ctypes` or `urllib.request` (submodules are included)"
            )));
        }
    }
    Ok(v)
}

fn de_call_patterns<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for p in &v {
        let without_stars = p.replace('*', "x");
        if !is_dotted_name(&without_stars) || p.starts_with('*') {
            return Err(de::Error::custom(format!(
                "`{p}` is not a call pattern; write a dotted name such as `os.remove`, optionally ending in `*` (`os.exec*`)"
            )));
        }
    }
    Ok(v)
}

fn de_escalate<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RuleId>, D::Error> {
    let v = Vec::<RuleId>::deserialize(d)?;
    for r in &v {
        if !r.escalatable() {
            return Err(de::Error::custom(format!(
                "rule `{}` cannot escalate: such code cannot be checked or run at all; remove it from `escalate`",
                r.as_str()
            )));
        }
    }
    Ok(v)
}

/// A number of generate/repair attempts, 1..=10.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Attempts(u8);

impl Attempts {
    /// The number of attempts.
    pub fn get(self) -> u8 {
        self.0
    }

    /// `n` attempts, or `None` when `n` is outside 1..=10.
    fn new(n: u8) -> Option<Self> {
        (1..=MAX_ATTEMPTS).contains(&n).then_some(Attempts(n))
    }
}

impl Default for Attempts {
    fn default() -> Self {
        Attempts(3)
    }
}

impl<'de> Deserialize<'de> for Attempts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(i64),
            S(String),
        }
        let n = match Raw::deserialize(d)? {
            Raw::N(n) => n,
            Raw::S(s) => {
                return Err(de::Error::custom(format!(
                    "attempts `{s}` is not a number; write a number from 1 to {MAX_ATTEMPTS}"
                )));
            }
        };
        u8::try_from(n)
            .ok()
            .and_then(Attempts::new)
            .ok_or_else(|| {
                de::Error::custom(format!(
                    "attempts `{n}` is out of range; write a number from 1 to {MAX_ATTEMPTS} (each attempt is a model call and a sandbox run)"
                ))
            })
    }
}

/// `output`: what results must look like.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Output {
    /// The JSON Schema results must match. In the file it is an inline
    /// mapping or a path (relative to the policy file) to a YAML or JSON
    /// file; after loading it is always the resolved schema.
    pub schema: serde_json::Value,
    /// How many times the code runs, each in a fresh container (1..=10). A
    /// result that changes between runs is flagged, not posted as fact.
    pub(crate) repeat: Repeat,
    /// Python expressions (or `assert` statements) over `result`, run in
    /// the sandbox after the schema validation, e.g.
    /// `0 <= result["average_conversion"] <= 1`.
    pub(crate) checks: Vec<String>,
    /// What a failed check does: `stop` (default) or `escalate`.
    pub(crate) on_check_failure: OnCheckFailure,
    /// `independent`: the model writes a second program without seeing the
    /// first; both run and their results must agree within `tolerance`.
    pub(crate) verify: VerifyMode,
    /// Largest difference two numbers may have and still agree, absolute or
    /// relative to the larger one (default 1e-9).
    pub(crate) tolerance: f64,
}

impl Default for Output {
    fn default() -> Self {
        Output {
            schema: serde_json::json!({"type": "object"}),
            repeat: Repeat::default(),
            checks: Vec::new(),
            on_check_failure: OnCheckFailure::default(),
            verify: VerifyMode::default(),
            tolerance: 1e-9,
        }
    }
}

/// Most runs `output.repeat` allows.
const MAX_REPEAT: u8 = 10;

/// `output.repeat`: how many runs in all (1..=[`MAX_REPEAT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Repeat(u8);

impl Repeat {
    /// `n` runs, when 1 ≤ n ≤ [`MAX_REPEAT`].
    pub(crate) fn new(n: u8) -> Option<Repeat> {
        (1..=MAX_REPEAT).contains(&n).then_some(Repeat(n))
    }

    /// The number of runs.
    pub(crate) fn get(self) -> u8 {
        self.0
    }
}

impl Default for Repeat {
    fn default() -> Self {
        Repeat(1)
    }
}

impl<'de> Deserialize<'de> for Repeat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        u8::try_from(n).ok().and_then(Repeat::new).ok_or_else(|| {
            de::Error::custom(format!(
                "repeat `{n}` is out of range; write a number from 1 to {MAX_REPEAT} (each is one more sandbox run)"
            ))
        })
    }
}

/// `output.on_check_failure`: what a failed `output.checks` entry does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OnCheckFailure {
    /// Stop without a result, showing the failed assertion.
    #[default]
    Stop,
    /// Ask a human: the code waits for `/compute approve`.
    Escalate,
}

/// `output.verify`: whether a second, independent program must agree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum VerifyMode {
    /// No second program.
    #[default]
    None,
    /// The model writes a second program without seeing the first.
    Independent,
}

/// `model.data`: how much of the input data may leave for the model provider,
/// in every request (generation, repairs, explanation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataLevel {
    /// File names, sizes, CSV header and first 5 rows, JSON top-level keys,
    /// the first lines of text; repairs carry up to 2,000 characters of the
    /// end of stderr; the explanation sees up to 4,000 characters of the result.
    #[default]
    Preview,
    /// File names, sizes, column names and inferred types (JSON keys and
    /// value kinds), no values; repairs carry only the exception lines of
    /// stderr; the explanation sees the result's keys and value types only.
    Schema,
    /// File names and sizes only; repairs say only what kind of failure
    /// happened (the exception type); no model explanation (the template is used).
    None,
}

/// `model`: what the model provider may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelPolicy {
    /// How much of the data leaves for the model (`preview`, `schema`, `none`).
    pub(crate) data: DataLevel,
}

/// `escalation`: who may approve code that escalated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Escalation {
    /// GitHub logins that may approve; empty means anyone with
    /// `min_permission`.
    approvers: Vec<String>,
    /// The weakest repository permission an approver needs.
    pub min_permission: Permission,
}

impl Default for Escalation {
    fn default() -> Self {
        Escalation {
            approvers: Vec::new(),
            min_permission: Permission::Maintain,
        }
    }
}

impl Escalation {
    /// Whether `login` (with `permission` on the repository) may approve or
    /// deny escalated code; `Err` says why not. Logins compare
    /// case-insensitively.
    pub(crate) fn permits(&self, login: &str, permission: Permission) -> Result<(), Refusal> {
        if !listed(&self.approvers, login) {
            return Err(Refusal::NotListed {
                login: login.to_string(),
                field: "escalation.approvers",
            });
        }
        if !meets(permission, self.min_permission) {
            return Err(Refusal::BelowMinimum {
                login: login.to_string(),
                has: permission,
                needs: self.min_permission,
                field: "escalation.min_permission",
            });
        }
        Ok(())
    }

    /// [`Escalation::permits`] as a yes or no.
    pub fn may_approve(&self, login: &str, permission: Permission) -> bool {
        self.permits(login, permission).is_ok()
    }
}

/// The policy file format version. Only `1` exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Version;

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(1)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        if n == 1 {
            Ok(Version)
        } else {
            Err(de::Error::custom(format!(
                "policy version `{n}` is not supported; write `version: 1`"
            )))
        }
    }
}

/// A whole policy (`version: 1`). Every omitted field takes a safe default;
/// [`Policy::default`] is the data-analysis policy of `policies/default.yml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// File format version; always 1.
    pub version: Version,
    /// Who may trigger runs.
    pub who: Who,
    /// The container.
    pub sandbox: SandboxPolicy,
    /// Which workspace files may be inputs.
    pub inputs: Inputs,
    /// What the code may contain.
    pub code: CodePolicy,
    /// How many generate/repair attempts a request gets (1..=10).
    pub attempts: Attempts,
    /// What results must look like.
    pub output: Output,
    /// Whether the bot explains the result in words next to the numbers.
    pub explain: bool,
    /// Who may approve escalated code.
    pub escalation: Escalation,
    /// What the model provider may see of the data.
    pub model: ModelPolicy,
    /// Where the policy came from (not part of the file).
    #[serde(skip)]
    pub origin: Option<PathBuf>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            version: Version,
            who: Who::default(),
            sandbox: SandboxPolicy::default(),
            inputs: Inputs::default(),
            code: CodePolicy::default(),
            attempts: Attempts::default(),
            output: Output::default(),
            explain: true,
            escalation: Escalation::default(),
            model: ModelPolicy::default(),
            origin: None,
        }
    }
}

impl Policy {
    /// Reads and validates a policy file. A relative `output.schema` path is
    /// resolved against the file's directory.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let name = path.display().to_string();
        let src = std::fs::read_to_string(path).map_err(|e| {
            PolicyError::at(
                &name,
                0,
                0,
                format!("cannot read the policy file ({e}); check the path"),
            )
        })?;
        let mut p = Self::parse(&src, &name, path.parent())?;
        p.origin = Some(path.to_path_buf());
        Ok(p)
    }

    /// Parses a policy from YAML text. `origin` names the source in errors;
    /// a relative `output.schema` path is resolved against the directory of
    /// `origin` (taken as a path), or the current directory.
    pub fn from_yaml_str(src: &str, origin: &str) -> Result<Policy, PolicyError> {
        Self::parse(src, origin, Path::new(origin).parent())
    }

    fn parse(src: &str, origin: &str, base: Option<&Path>) -> Result<Policy, PolicyError> {
        // An empty document (or only comments) is the default policy.
        let meaningful = src.lines().any(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#') && t != "---"
        });
        let mut policy: Policy = if meaningful {
            serde_saphyr::from_str(src).map_err(|e| PolicyError::from_yaml(origin, &e))?
        } else {
            Policy::default()
        };
        policy.resolve_schema(src, origin, base)?;
        let t = policy.output.tolerance;
        if !(t.is_finite() && t >= 0.0) {
            let (line, column) = key_position(src, "tolerance");
            return Err(PolicyError::at(
                origin,
                line,
                column,
                format!("output.tolerance `{t}` must be a number ≥ 0, e.g. 1e-9"),
            ));
        }
        Ok(policy)
    }

    fn resolve_schema(
        &mut self,
        src: &str,
        origin: &str,
        base: Option<&Path>,
    ) -> Result<(), PolicyError> {
        let (line, column) = key_position(src, "schema");
        match &self.output.schema {
            serde_json::Value::String(rel) => {
                let rel = rel.clone();
                let dir = base
                    .filter(|b| !b.as_os_str().is_empty())
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| PathBuf::from("."));
                let path = dir.join(&rel);
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    PolicyError::at(
                        origin,
                        line,
                        column,
                        format!(
                            "cannot read output schema `{}` ({e}); give a path relative to the policy file or an inline mapping",
                            path.display()
                        ),
                    )
                })?;
                let value: serde_json::Value = serde_json::from_str(&text)
                    .or_else(|_| serde_saphyr::from_str(&text))
                    .map_err(|e| {
                        PolicyError::at(
                            origin,
                            line,
                            column,
                            format!(
                                "output schema `{}` is neither JSON nor YAML ({e})",
                                path.display()
                            ),
                        )
                    })?;
                self.output.schema = value;
            }
            serde_json::Value::Object(_) | serde_json::Value::Bool(_) => {}
            _ => {
                return Err(PolicyError::at(
                    origin,
                    line,
                    column,
                    "output.schema must be a JSON Schema mapping (e.g. `{type: object}`) or a path to a schema file",
                ));
            }
        }
        if !self.output.schema.is_object() && !self.output.schema.is_boolean() {
            return Err(PolicyError::at(
                origin,
                line,
                column,
                "the output schema must be a JSON Schema object",
            ));
        }
        if let Err(e) = jsonschema::validator_for(&self.output.schema) {
            return Err(PolicyError::at(
                origin,
                line,
                column,
                format!("the output schema is not a valid JSON Schema: {e}"),
            ));
        }
        Ok(())
    }

    /// The resource limits the sandbox enforces: the `sandbox` section's,
    /// with /data sized by `inputs.max_total_bytes`.
    pub fn limits(&self) -> Limits {
        Limits {
            data_max_bytes: self.inputs.max_total_bytes,
            ..self.sandbox.limits.clone()
        }
    }

    /// Sets the sandbox limits (e.g. after [`Policy::tightened_limits`]).
    pub(crate) fn set_limits(&mut self, l: &Limits) {
        self.inputs.max_total_bytes = l.data_max_bytes;
        self.sandbox.limits = l.clone();
    }

    /// The policy's limits tightened by `requested` (e.g. from command-line
    /// flags): every field is the stricter of the two, so flags can only
    /// tighten. The second value lists each requested loosening that was
    /// ignored, as `field: requested X, policy allows Y`.
    pub fn tightened_limits(&self, requested: &Limits) -> (Limits, Vec<String>) {
        let p = self.limits();
        let mut notes = Vec::new();
        macro_rules! pick {
            ($f:ident, $show:expr) => {{
                if requested.$f > p.$f {
                    notes.push(format!(
                        "{}: requested {}, policy allows {}",
                        stringify!($f),
                        $show(&requested.$f),
                        $show(&p.$f)
                    ));
                    p.$f
                } else {
                    requested.$f
                }
            }};
        }
        let dur = |d: &Duration| crate::units::format_duration(*d);
        let size = |b: &ByteSize| b.to_string();
        let num = |n: &dyn fmt::Display| n.to_string();
        let out = Limits {
            timeout: pick!(timeout, dur),
            memory: pick!(memory, size),
            cpus: pick!(cpus, |c: &f64| num(c)),
            pids: pick!(pids, |c: &i64| num(c)),
            stdout_cap: pick!(stdout_cap, size),
            stderr_cap: pick!(stderr_cap, size),
            tmpfs: pick!(tmpfs, size),
            artifacts_max_files: pick!(artifacts_max_files, |c: &u32| num(c)),
            artifacts_max_bytes: pick!(artifacts_max_bytes, size),
            data_max_bytes: pick!(data_max_bytes, size),
            nofile: pick!(nofile, |c: &u64| num(c)),
            fsize: pick!(fsize, size),
        };
        (out, notes)
    }

    /// The sandbox image reference.
    pub fn image(&self) -> &str {
        &self.sandbox.image
    }

    /// Rules for the in-sandbox runner's audit hooks: the top-level names of
    /// `code.deny_modules`, files restricted to the inputs, `/tmp`, `/out`
    /// and the Python installation, and subprocess / network refused. The
    /// runner applies them to what the code itself starts (the nearest
    /// calling frame is the code), so pandas may still load `subprocess`
    /// internally; a module some library already loaded raises no import
    /// event, which is why the static check comes first.
    pub fn runtime_rules(&self) -> RuntimeRules {
        let mut deny: Vec<String> = Vec::new();
        for m in &self.code.deny_modules {
            let top = m.split('.').next().unwrap_or(m).to_string();
            if !deny.contains(&top) {
                deny.push(top);
            }
        }
        RuntimeRules {
            deny_imports: deny,
            restrict_files: true,
            deny_subprocess: true,
            deny_network: true,
        }
    }

    /// The effective policy as YAML, with every default filled in and the
    /// output schema resolved. Loading it again gives the same policy.
    pub fn to_effective_yaml(&self) -> String {
        match serde_saphyr::to_string(self) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("cannot serialize the policy: {e}");
                format!("# cannot serialize the policy: {e}\n")
            }
        }
    }
}

/// The first position of `key:` in the YAML source (best effort, for errors
/// found after parsing).
fn key_position(src: &str, key: &str) -> (u64, u64) {
    for (i, line) in src.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(key)
            && rest.trim_start().starts_with(':')
        {
            let col = line.chars().count() - t.chars().count() + 1;
            return (i as u64 + 1, col as u64);
        }
    }
    (0, 0)
}
