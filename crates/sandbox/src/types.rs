//! Plain data that goes into and comes out of a sandbox run.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use compute_bot_units::{ByteSize, human_duration};
use serde::{Deserialize, Serialize};

use super::SandboxError;
use super::input::InputFile;

/// The image used when neither the policy nor the command line names one.
pub const DEFAULT_IMAGE: &str = "compute-bot-sandbox:python";

/// Resource limits of one run. Every one is enforced by the container runtime
/// (cgroups, ulimits, tmpfs sizes) or by the bot's reader, not by the code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Wall-clock deadline, counted from the moment the code is handed over.
    #[serde(with = "human_duration")]
    pub timeout: Duration,
    /// Memory limit of the container; swap is set equal, so there is no swap.
    pub memory: ByteSize,
    /// CPU quota in cores (`0.5` = half a core) while the code runs.
    pub cpus: f64,
    /// CPU quota in cores while the runner loads modules and no code has
    /// started: `None` means every CPU of the host. It is lowered to
    /// [`Limits::cpus`] before the code starts, where the engine can change
    /// a running container's quota ([`CpuBoost`]); elsewhere `cpus` holds
    /// from the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preload_cpus: Option<f64>,
    /// Maximum number of processes and threads in the container.
    pub pids: i64,
    /// Bytes of stdout kept; the rest is counted and dropped.
    pub stdout_cap: ByteSize,
    /// Bytes of stderr kept; the rest is counted and dropped.
    pub stderr_cap: ByteSize,
    /// Size of the `/tmp` tmpfs.
    pub tmpfs: ByteSize,
    /// Most files collected from `/out`.
    pub artifacts_max_files: u32,
    /// Most bytes collected from `/out` (also the size of that tmpfs).
    pub artifacts_max_bytes: ByteSize,
    /// Most bytes of input files under `/data` (the size of its tmpfs; see
    /// [`Limits::data_on_disk`]).
    pub data_max_bytes: ByteSize,
    /// Open file descriptors per process (`RLIMIT_NOFILE`).
    pub nofile: u64,
    /// Largest file a process may write (`RLIMIT_FSIZE`).
    pub fsize: ByteSize,
}

/// The most `/data` may hold as a tmpfs: the default
/// `inputs.max_total_bytes`. See [`Limits::data_on_disk`].
pub const TMPFS_DATA_MAX: ByteSize = ByteSize::mib(64);

impl Limits {
    /// Whether `/data` is an anonymous volume on the engine's disk rather
    /// than a tmpfs: when it may hold more than [`TMPFS_DATA_MAX`]. A
    /// tmpfs's pages are charged to the container's memory cgroup (there is
    /// no swap), so big inputs in a tmpfs would take the memory the code
    /// needs, and the runner writes a tmpfs `/data` under `RLIMIT_FSIZE`
    /// (`fsize`, 64MiB by default). The one rule; the backend and the docs
    /// follow it.
    pub fn data_on_disk(&self) -> bool {
        self.data_max_bytes.bytes() > TMPFS_DATA_MAX.bytes()
    }
}

/// The CFS period of every container's CPU quota (100 ms, the kernel's default).
pub const CPU_PERIOD_US: i64 = 100_000;

/// A CPU quota in cores as the cgroup's microseconds per [`CPU_PERIOD_US`].
pub fn cpu_quota(cores: f64) -> i64 {
    (cores.max(0.01) * CPU_PERIOD_US as f64).round() as i64
}

/// The CPU quota of a container whose modules load above the code's limit:
/// created with `preload` (0: none, every host CPU), lowered to `code` by a
/// live update of the container before the code starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuBoost {
    /// The quota while modules load (µs per period; 0: no quota).
    pub preload: i64,
    /// The quota the code runs under (µs per period).
    pub code: i64,
}

impl CpuBoost {
    /// The boost of a run with these limits, or `None` when it would not
    /// be one: nothing is preloaded, or the preload's cap is not above the
    /// code's limit.
    pub fn for_run(limits: &Limits, preloads: bool) -> Option<CpuBoost> {
        let code = cpu_quota(limits.cpus);
        let preload = match limits.preload_cpus {
            None => 0,
            Some(c) if cpu_quota(c) > code => cpu_quota(c),
            Some(_) => return None,
        };
        preloads.then_some(CpuBoost { preload, code })
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(10),
            // 512 MiB since the image holds SciPy and scikit-learn (issue 23):
            // pandas + scipy.stats + sklearn with a 14 MiB CSV loaded and a
            // model fitted peak at 226 MiB and fail under 192 MiB, which left
            // 256 MiB no room for real data.
            memory: ByteSize::mib(512),
            cpus: 1.0,
            preload_cpus: None,
            pids: 64,
            stdout_cap: ByteSize::kib(64),
            stderr_cap: ByteSize::kib(64),
            tmpfs: ByteSize::mib(64),
            artifacts_max_files: 16,
            artifacts_max_bytes: ByteSize::mib(8),
            data_max_bytes: ByteSize::mib(64),
            nofile: 256,
            fsize: ByteSize::mib(64),
        }
    }
}

/// Rules the in-sandbox runner applies through Python audit hooks while the
/// code runs. They are a second line behind the static check; the container
/// is the boundary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RuntimeRules {
    /// Top-level modules (or `pkg.*` patterns) the code may not import.
    pub deny_imports: Vec<String>,
    /// When set, opening files is refused outside `/data`, `/tmp`, `/out` and
    /// the Python installation.
    pub restrict_files: bool,
    /// When set, subprocess / exec / fork started by the code itself is refused.
    pub deny_subprocess: bool,
    /// When set, socket connects and name lookups by the code are refused
    /// (they fail anyway: the container has no network).
    pub deny_network: bool,
}

/// The OCI runtime the engine starts the container with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    /// runc (the engine's default) plus compute-bot's own seccomp allowlist.
    #[default]
    Runc,
    /// gVisor: a user-space kernel between the code and the host
    /// (`scripts/install-gvisor` registers it with Docker).
    Runsc,
}

/// The variable that names the machine's default runtime (`runc` or
/// `runsc`) for runs whose flags and policy name none. Only front ends read
/// it, once, and pass its value to [`Runtime::resolve`].
pub const RUNTIME_VARIABLE: &str = "COMPUTE_BOT_RUNTIME";

impl Runtime {
    /// The runtime of a run, decided once by the front end: the flag
    /// (`--runtime`), else the policy's `sandbox.runtime`, else the
    /// machine's default (the value of [`RUNTIME_VARIABLE`]; empty is
    /// unset), else runc. A value other than `runc` or `runsc` is an error
    /// that names the variable, even when a flag or the policy decides.
    pub fn resolve(
        flag: Option<Runtime>,
        policy: Option<Runtime>,
        machine: Option<&str>,
    ) -> Result<Runtime, String> {
        let machine = match machine.map(str::trim).filter(|v| !v.is_empty()) {
            None => None,
            Some("runc") => Some(Runtime::Runc),
            Some("runsc") => Some(Runtime::Runsc),
            Some(other) => {
                return Err(format!(
                    "{RUNTIME_VARIABLE}=`{other}` is not a runtime compute-bot knows; set it to \
                     `runc` or `runsc`, or unset it (the default is runc)"
                ));
            }
        };
        Ok(flag.or(policy).or(machine).unwrap_or_default())
    }

    /// What the audit of a run under this runtime rests on (`doctor` says
    /// it): under runc the kernel hands every file open, socket and program
    /// start to the runner (seccomp user notification); gVisor implements
    /// no user notification, so there the kernel refuses program starts and
    /// the files are the code's interpreter's word.
    pub fn audit_record(self) -> &'static str {
        match self {
            Runtime::Runc => {
                "the full record: the kernel hands every file open, socket and program start to the runner, Python and native code alike"
            }
            Runtime::Runsc => {
                "program starts refused by the kernel, but files opened only as the code's interpreter reports them (gVisor has no seccomp notification; runc gives the full record)"
            }
        }
    }

    /// The name the engine knows the runtime by.
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Runc => "runc",
            Runtime::Runsc => "runsc",
        }
    }
}

/// The system-call filter a run's container started with, as the backend
/// asked the engine for it (the engine's inspect shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeccompProfile {
    /// compute-bot's allowlist (`sandbox/seccomp.json`).
    Own,
    /// None: gVisor's Sentry implements the system calls.
    Sentry,
}

impl SeccompProfile {
    /// In words, for the answer.
    pub fn words(self) -> &'static str {
        match self {
            SeccompProfile::Own => "compute-bot's allowlist (`sandbox/seccomp.json`)",
            SeccompProfile::Sentry => {
                "none sent: gVisor's Sentry implements the system calls, the host's kernel never sees the code's"
            }
        }
    }
}

/// The fixed environment every sandbox gets (before what the run names).
/// `PYTHONHASHSEED`, `TZ` and the locale make runs repeatable: set ordering,
/// `time.localtime` and locale-dependent formatting do not vary by run or host.
pub const BASE_ENV: &[(&str, &str)] = &[
    ("HOME", "/tmp"),
    ("LANG", "C.UTF-8"),
    ("LC_ALL", "C.UTF-8"),
    ("TZ", "UTC"),
    ("PYTHONHASHSEED", "0"),
    ("MPLBACKEND", "Agg"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PATH", "/usr/local/bin:/usr/bin:/bin"),
    // joblib (scikit-learn's n_jobs) runs every task in the one process: worker
    // processes would each load the stack again under the one memory limit,
    // outside the runner's audit hooks (the image sets it too).
    ("JOBLIB_MULTIPROCESSING", "0"),
];

/// Modules the child interpreter imports by default while it waits for the code.
pub const DEFAULT_PRELOAD: &[&str] = &["pandas", "numpy", "matplotlib.pyplot"];

/// Everything needed to create the container; shared by every run with the
/// same settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxConfig {
    /// Image reference (tag or digest).
    pub image: String,
    /// Limits enforced on the container.
    pub limits: Limits,
    /// The only environment variables the code sees (besides a fixed few
    /// such as `HOME=/tmp`). The bot's own environment never enters.
    pub env: BTreeMap<String, String>,
    /// Extra labels to put on the container (the run labels are always set).
    pub labels: BTreeMap<String, String>,
    /// The OCI runtime (runc with the seccomp allowlist, or gVisor's runsc);
    /// resolved by the front end ([`Runtime::resolve`]), runc by default.
    pub runtime: Runtime,
    /// Modules the child interpreter imports while the container waits for
    /// the code (dotted names). Empty by default here; policies default to
    /// [`DEFAULT_PRELOAD`]. The child stops at the next module once the code
    /// has arrived. Preloading changes nothing the code may do: the runner
    /// still audits and refuses its imports, cached or not.
    pub preload: Vec<String>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            image: DEFAULT_IMAGE.to_string(),
            limits: Limits::default(),
            env: BTreeMap::new(),
            labels: BTreeMap::new(),
            runtime: Runtime::Runc,
            preload: Vec::new(),
        }
    }
}

/// What is handed to a prepared container: the code and its inputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Job {
    /// Python source to run as `__main__`.
    pub code: String,
    /// Files placed under `/data`.
    pub inputs: Vec<InputFile>,
    /// Runtime rules applied by the runner's audit hooks.
    pub rules: RuntimeRules,
}

/// The one folder under `/data` an input may be in: the bot's own, for the
/// data it fetched from GitHub (`/data/github/<source>.csv`). Every other
/// input is a plain file name directly under `/data`.
pub const GITHUB_DIR: &str = "github";

/// What is wrong with `name` as an input's name under `/data`, or `None`:
/// **the** rule of input names (the job check, admission and the runner
/// apply it). A name is a plain file name (no `/`, not `.` or `..`, not
/// [`GITHUB_DIR`], which is the bot's folder), or `github/<name>.csv` with
/// `<name>` of lowercase letters, digits and `_` (the bot's fetched data;
/// never a user's file, whose name is its base name). Nothing else: no
/// absolute path, no `..`, no other or nested folder.
pub fn input_name_problem(name: &str) -> Option<String> {
    let plain = |n: &str| !(n.is_empty() || n == "." || n == ".." || n.contains(['/', '\0']));
    if let Some(rest) = name
        .strip_prefix(GITHUB_DIR)
        .and_then(|r| r.strip_prefix('/'))
    {
        let ok = rest.strip_suffix(".csv").is_some_and(|stem| {
            !stem.is_empty()
                && stem
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        });
        return (!ok).then(|| {
            format!(
                "is not a name the bot's folder /data/{GITHUB_DIR}/ takes: only `{GITHUB_DIR}/<source>.csv` \
                 (lowercase letters, digits and `_`) is; other inputs are plain file names under /data"
            )
        });
    }
    if name == GITHUB_DIR {
        return Some(format!(
            "is the name of the bot's folder /data/{GITHUB_DIR}/ (where the `github:` data goes); rename the file, e.g. `{GITHUB_DIR}.csv`"
        ));
    }
    (!plain(name)).then(|| {
        format!(
            "is not a plain file name; inputs appear as /data/<file name> (no `/`, `..` or folders; \
             only the bot's own data is under /data/{GITHUB_DIR}/)"
        )
    })
}

impl Job {
    /// The sandbox's own check of a job, whatever the front end checked:
    /// each input's name follows [`input_name_problem`] (it becomes
    /// `/data/<name>`), no name twice, and together they fit `/data`
    /// (`limits.data_max_bytes`, which a policy sets through
    /// `inputs.max_total_bytes`).
    pub(crate) fn check(&self, limits: &Limits) -> Result<(), SandboxError> {
        let mut total = 0u64;
        let mut seen = HashSet::new();
        for f in &self.inputs {
            if let Some(problem) = input_name_problem(&f.name) {
                return Err(SandboxError::BadInput {
                    name: f.name.clone(),
                    problem,
                });
            }
            if !seen.insert(&f.name) {
                return Err(SandboxError::BadInput {
                    name: f.name.clone(),
                    problem: "is given twice; two inputs cannot share a name under /data".into(),
                });
            }
            total += f.size();
        }
        if total > limits.data_max_bytes.bytes() {
            return Err(SandboxError::BadInput {
                name: self
                    .inputs
                    .iter()
                    .max_by_key(|f| f.size())
                    .map(|f| f.name.clone())
                    .unwrap_or_default(),
                problem: format!(
                    "the inputs total {} bytes, over the {} limit for /data; pass fewer or smaller \
                     files, or raise `inputs.max_total_bytes` in the policy",
                    total, limits.data_max_bytes
                ),
            });
        }
        Ok(())
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The code exited 0 and its output fit the caps.
    Ok,
    /// The code exited non-zero or raised.
    Error,
    /// The deadline passed and the container was killed.
    Timeout,
    /// The memory limit was hit.
    Oom,
    /// The code exited 0 but printed more than a cap allows; output was cut.
    OutputLimit,
    /// The code was killed by a signal (other than by the deadline or OOM),
    /// or its container was killed or removed from outside.
    Killed,
    /// The connection to the engine was lost while the code ran: how the
    /// code ended is unknown, and the run was stopped.
    Lost,
    /// The run's record was tampered with (forged, repeated or missing
    /// frames, a forged or blinded audit channel) or did not arrive whole
    /// (an over-long or unreadable frame, a runner that ended without its
    /// report): nothing the code reported is taken, and the run stops
    /// without a repair.
    Tampered,
}

impl RunStatus {
    /// The name used in JSON and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Error => "error",
            RunStatus::Timeout => "timeout",
            RunStatus::Oom => "oom",
            RunStatus::OutputLimit => "output_limit",
            RunStatus::Killed => "killed",
            RunStatus::Lost => "lost",
            RunStatus::Tampered => "tampered",
        }
    }
}

/// Peak memory and CPU time of the user code, as the kernel told the runner
/// (`wait4` on the code's process; the runner is pid 1, outside the code's
/// reach), and of the whole container (its cgroup).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// Peak resident memory of the code's process (bytes); `None` when the
    /// process never finished (timeout).
    pub peak_memory_bytes: Option<u64>,
    /// User + system CPU time of the code's process (milliseconds).
    pub cpu_time_ms: Option<u64>,
    /// The container's cgroup: runner, preload and code together.
    #[serde(default, skip_serializing_if = "is_default")]
    pub container: super::CgroupFacts,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// A file the code opened, as its interpreter's audit hook reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileOpen {
    /// The path as passed to `open`.
    pub path: String,
    /// `r`, `w`, `a`, `x`, with `b` / `+` as given.
    pub mode: String,
    /// True when the runner refused the open.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub denied: bool,
}

/// What the code tried: the kernel's record ([`Audit::kernel`], seen outside
/// the code's process) and its interpreter's (audit hooks, PEP 578: in the
/// code's own process, so the code can change it; see [`super::Source`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Audit {
    /// What the kernel saw and refused, as the runner recorded it; `None`
    /// for a record from before the second seccomp stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<super::KernelRecord>,
    /// Files opened outside the Python installation (interpreter).
    pub files_opened: Vec<FileOpen>,
    /// `connect` / `getaddrinfo` / `gethostbyname` targets, as `event target`.
    pub network_attempts: Vec<String>,
    /// `subprocess`, `os.system`, `exec*`, `spawn*`, `fork` attempts.
    pub subprocess_attempts: Vec<String>,
    /// Top-level modules imported while the code ran.
    pub imports: Vec<String>,
    /// Things the runner refused (denied imports, opens, ...).
    pub refused: Vec<String>,
    /// Modules the child interpreter imported before the code arrived
    /// (the preload that succeeded), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preloaded: Vec<String>,
    /// Modules of the preload the child did not start because the code had
    /// arrived (it stops at the next module then), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preload_skipped: Vec<String>,
    /// True when more events happened than were kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// A file the code left in `/out`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// File name relative to `/out`.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Hex SHA-256 of the contents.
    pub sha256: String,
    /// The contents (not serialized; written out by front ends).
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

/// The image a run used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImageInfo {
    /// The reference asked for.
    pub reference: String,
    /// The image id (`sha256:...`) the engine resolved it to.
    pub id: String,
    /// Repository digests, when the image came from a registry.
    pub digests: Vec<String>,
    /// Version labels (`org.compute-bot.*`).
    pub labels: BTreeMap<String, String>,
    /// The digests of its layers, base first (`RootFS.Layers`: each the
    /// sha256 of the uncompressed layer tar); `compute-bot doctor` compares
    /// them with the release's. Not part of the run record.
    #[serde(skip)]
    pub layers: Vec<String>,
    /// `os/architecture` as the engine names it (`linux/amd64`); empty when
    /// the engine names neither. Not part of the run record.
    #[serde(skip)]
    pub platform: String,
}

/// The libraries a sandbox image may name in its labels, in the order they
/// are shown: the label key (`org.compute-bot.<import name>`, written by both
/// recipes from `sandbox/requirements.lock`) and the name people know them
/// by. Every other `org.compute-bot.*` label (`sandbox`, `recipe`,
/// `lock-sha256`, `recipe-sha256`, ...) is bookkeeping, not a library.
pub const STACK_LIBRARIES: &[(&str, &str)] = &[
    ("python", "Python"),
    ("pandas", "pandas"),
    ("numpy", "numpy"),
    ("matplotlib", "matplotlib"),
    // SQL over CSV, Parquet and JSON files.
    ("duckdb", "DuckDB"),
    // Parquet for pandas.
    ("fastparquet", "fastparquet"),
    // Excel `.xlsx` for pandas.
    ("openpyxl", "openpyxl"),
    // The analyst's instruments: tests and p-values, regression summaries,
    // models and splits, statistical charts.
    ("scipy", "SciPy"),
    ("statsmodels", "statsmodels"),
    ("sklearn", "scikit-learn"),
    ("seaborn", "seaborn"),
];

/// The data stack of a sandbox image, read from its `org.compute-bot.*` labels
/// (written by both recipes from `sandbox/requirements.lock`): the version of
/// each of [`STACK_LIBRARIES`] the image names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataStack {
    /// Label key (import name) → version, only for [`STACK_LIBRARIES`].
    versions: BTreeMap<String, String>,
}

impl DataStack {
    /// The versions named by the labels of an image (empty or blank values
    /// are left out).
    pub fn from_labels(labels: &BTreeMap<String, String>) -> Self {
        let versions = STACK_LIBRARIES
            .iter()
            .filter_map(|(key, _)| {
                let v = labels.get(&format!("org.compute-bot.{key}"))?.trim();
                (!v.is_empty()).then(|| (key.to_string(), v.to_string()))
            })
            .collect();
        DataStack { versions }
    }

    /// Label key (import name: `python`, `pandas`, `sklearn`, ...) → version.
    pub fn versions(&self) -> &BTreeMap<String, String> {
        &self.versions
    }

    /// `Python 3.11.2, pandas 2.3.3, numpy 2.3.5, matplotlib 3.11.2, DuckDB
    /// 2.0.1, ..., scikit-learn 1.9.1, seaborn 0.13.2` (the ones the image
    /// names, in [`STACK_LIBRARIES`] order), or `None` when it names none.
    pub fn summary(&self) -> Option<String> {
        let parts: Vec<String> = STACK_LIBRARIES
            .iter()
            .filter_map(|(key, name)| self.versions.get(*key).map(|v| format!("{name} {v}")))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

impl ImageInfo {
    /// The data stack the image's labels name.
    pub fn stack(&self) -> DataStack {
        DataStack::from_labels(&self.labels)
    }
}

/// Everything known about one finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// How it ended.
    pub status: RunStatus,
    /// Exit code of the code's process (`None` when it never exited).
    pub exit_code: Option<i64>,
    /// Signal that ended the code's process, if any.
    pub signal: Option<i32>,
    /// Milliseconds the code's process ran (measured by the runner; on
    /// timeout from its start to the deadline, from the handover when it
    /// never started, 0 when a preload kept it from starting).
    pub duration_ms: u64,
    /// Milliseconds from handing over the job until the outcome was
    /// collected (before the container's removal).
    pub collected_ms: u64,
    /// Captured stdout (lossy UTF-8), at most the stdout cap.
    pub stdout: String,
    /// Captured stderr (lossy UTF-8), at most the stderr cap.
    pub stderr: String,
    /// True when stdout was cut at the cap.
    pub stdout_truncated: bool,
    /// True when stderr was cut at the cap.
    pub stderr_truncated: bool,
    /// True when the deadline killed the run.
    pub timed_out: bool,
    /// True when the memory limit was hit.
    pub oom_killed: bool,
    /// The image used.
    pub image: ImageInfo,
    /// The limits that were applied.
    pub limits: Limits,
    /// Peak memory and CPU time.
    pub resources: Resources,
    /// What the code tried (reported from inside the sandbox).
    pub audit: Audit,
    /// Files collected from `/out`.
    pub artifacts: Vec<Artifact>,
    /// Hex SHA-256 of the code that ran.
    pub code_sha256: String,
    /// The container's name (already removed).
    pub container: String,
    /// Problems the bot noticed (artifacts dropped, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What showed that the run's record was tampered with (status
    /// [`RunStatus::Tampered`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tampered: Vec<String>,
    /// Who saw each fact, by field ([`super::sources`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub sources: std::collections::BTreeMap<String, super::Source>,
    /// The execution environment that ran the code (the first or the
    /// policy's reserve) and why; set by [`super::Executor`]'s connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<super::Environment>,
    /// The system-call filter the container started with; `None` where the
    /// backend does not say (older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seccomp: Option<SeccompProfile>,
    /// In a session of steps ([`super::Steps`]), which step this is (1 for
    /// the first); `None` for a run of one program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// A step's last expression, as the code's interpreter shows it (its
    /// `repr`, as a notebook shows `Out[n]`; cut at 4,096 characters);
    /// reported by the interpreter, so the code controls it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boost_only_where_modules_load_and_the_cap_is_above_the_codes_limit() {
        let l = Limits::default();
        assert_eq!(
            CpuBoost::for_run(&l, true),
            Some(CpuBoost {
                preload: 0,
                code: 100_000
            }),
            "every host CPU while modules load"
        );
        assert_eq!(CpuBoost::for_run(&l, false), None, "nothing to load");
        let capped = Limits {
            cpus: 0.5,
            preload_cpus: Some(2.0),
            ..Limits::default()
        };
        assert_eq!(
            CpuBoost::for_run(&capped, true),
            Some(CpuBoost {
                preload: 200_000,
                code: 50_000
            })
        );
        let same = Limits {
            preload_cpus: Some(1.0),
            ..Limits::default()
        };
        assert_eq!(
            CpuBoost::for_run(&same, true),
            None,
            "no boost at the code's limit"
        );
        assert_eq!(cpu_quota(0.0), 1_000, "never 0: that would be no quota");
    }

    #[test]
    fn the_runtime_is_the_flag_else_the_policy_else_the_machine_else_runc() {
        let (c, s) = (Some(Runtime::Runc), Some(Runtime::Runsc));
        assert_eq!(Runtime::resolve(c, s, Some("runsc")), Ok(Runtime::Runc));
        assert_eq!(Runtime::resolve(None, c, Some("runsc")), Ok(Runtime::Runc));
        assert_eq!(
            Runtime::resolve(None, None, Some("runsc")),
            Ok(Runtime::Runsc)
        );
        assert_eq!(Runtime::resolve(None, None, Some(" ")), Ok(Runtime::Runc));
        assert_eq!(Runtime::resolve(None, None, None), Ok(Runtime::Runc));
        let e = Runtime::resolve(s, None, Some("gvisor")).unwrap_err();
        assert!(e.contains("COMPUTE_BOT_RUNTIME=`gvisor`"), "{e}");
        assert!(e.contains("`runc` or `runsc`"), "{e}");
        // No hidden global: the default configuration names runc.
        assert_eq!(SandboxConfig::default().runtime, Runtime::Runc);
    }

    #[test]
    fn the_job_check_names_the_policy_key_that_sizes_data() {
        let job = Job {
            inputs: vec![
                InputFile::new("a.csv", vec![b'x'; 600]),
                InputFile::new("b.csv", vec![b'x'; 500]),
            ],
            ..Job::default()
        };
        let limits = Limits {
            data_max_bytes: ByteSize(1000),
            ..Limits::default()
        };
        let e = job.check(&limits).unwrap_err().to_string();
        assert!(e.starts_with("input file `a.csv`"), "{e}");
        assert!(e.contains("`inputs.max_total_bytes`"), "{e}");
        assert!(!e.contains("data_max_bytes"), "{e}");
        let twice = Job {
            inputs: vec![job.inputs[1].clone(), job.inputs[1].clone()],
            ..Job::default()
        };
        assert!(
            twice
                .check(&limits)
                .unwrap_err()
                .to_string()
                .contains("given twice")
        );
    }

    #[test]
    fn input_names_are_plain_or_the_bots_own_github_folder() {
        for ok in [
            "a.csv",
            "github.csv",
            "github_pulls.csv",
            "github/pulls.csv",
            "github/workflow_runs.csv",
            ".hidden",
        ] {
            assert_eq!(input_name_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "github",
            "github/",
            "github/../x",
            "github/../x.csv",
            "github/a/b.csv",
            "github/Pulls.csv",
            "github/pulls.txt",
            "github/.csv",
            "a/b.csv",
            "/etc/passwd",
            "/data/github/pulls.csv",
            "other/pulls.csv",
            "github//pulls.csv",
            "x\0y",
        ] {
            assert!(input_name_problem(bad).is_some(), "{bad:?} passed");
        }
        let e = input_name_problem("a/b.csv").unwrap();
        assert!(
            e.contains("plain file name") && e.contains("/data/github/"),
            "{e}"
        );
        let e = input_name_problem("github/../x").unwrap();
        assert!(e.contains("`github/<source>.csv`"), "{e}");
        let e = input_name_problem("github").unwrap();
        assert!(e.contains("rename the file"), "{e}");
    }

    #[test]
    fn the_data_stack_names_the_file_readers_of_the_image() {
        let labels: BTreeMap<String, String> = [
            ("python", "3.11.2"),
            ("pandas", "2.3.3"),
            ("numpy", "2.3.5"),
            ("matplotlib", "3.11.2"),
            ("duckdb", "2.0.1"),
            ("fastparquet", "2026.9.0"),
            ("openpyxl", "3.1.5"),
            ("scipy", "1.17.1"),
            ("statsmodels", "0.15.0"),
            ("sklearn", "1.9.1"),
            ("seaborn", "0.13.2"),
            ("lock-sha256", "ab12"),
            ("recipe-sha256", "cd34"),
            ("recipe", "debian-bookworm"),
            ("sandbox", "python"),
        ]
        .iter()
        .map(|(k, v)| (format!("org.compute-bot.{k}"), v.to_string()))
        .collect();
        assert_eq!(
            DataStack::from_labels(&labels).summary().unwrap(),
            "Python 3.11.2, pandas 2.3.3, numpy 2.3.5, matplotlib 3.11.2, DuckDB 2.0.1, \
             fastparquet 2026.9.0, openpyxl 3.1.5, SciPy 1.17.1, statsmodels 0.15.0, \
             scikit-learn 1.9.1, seaborn 0.13.2"
        );
        // Bookkeeping labels are no libraries.
        let stack = DataStack::from_labels(&labels);
        let keys: Vec<&str> = stack.versions().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 11, "{keys:?}");
        assert!(!keys.iter().any(|k| k.contains("sha256") || *k == "recipe"));
        // An image of an older lock names only what it has.
        let old: BTreeMap<String, String> = labels
            .into_iter()
            .filter(|(k, _)| {
                ![
                    "duckdb",
                    "fastparquet",
                    "scipy",
                    "statsmodels",
                    "sklearn",
                    "seaborn",
                ]
                .iter()
                .any(|l| k.ends_with(l))
            })
            .collect();
        assert_eq!(
            DataStack::from_labels(&old).summary().unwrap(),
            "Python 3.11.2, pandas 2.3.3, numpy 2.3.5, matplotlib 3.11.2, openpyxl 3.1.5"
        );
        assert_eq!(DataStack::default().summary(), None);
    }
}
