//! The `sandbox` section: image, network, runtime, preload and the resource
//! [`Limits`] with the ranges a policy may set.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use compute_bot_sandbox::{DEFAULT_IMAGE, DEFAULT_PRELOAD, Environments, Limits, Reserve, Runtime};
use compute_bot_units::{ByteSize, human_duration};

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
    pub image: String,
    /// The limits, with these ranges checked on reading: `timeout` 100ms..=10m,
    /// `memory` 16MiB..=16GiB, `cpus` above 0 and at most 64, `pids` 1..=4096.
    /// `data_max_bytes` is not a key of this section: /data holds the inputs,
    /// so [`Policy::limits`](crate::Policy::limits) takes its size from `inputs.max_total_bytes`.
    pub(super) limits: Limits,
    /// Network mode; only `none` is accepted.
    network: Network,
    /// OCI runtime: `runc` (with compute-bot's seccomp allowlist) or
    /// `runsc` (gVisor; see `scripts/install-gvisor`); `None` when the
    /// policy names none, so the machine's default applies
    /// ([`Runtime::resolve`]).
    pub runtime: Option<Runtime>,
    /// Modules imported while the container waits for code the model is
    /// still writing (default pandas, numpy, matplotlib.pyplot), after
    /// those the question's words call for (`sandbox::preload_while_writing`);
    /// known code preloads its own heavy imports instead
    /// (`sandbox::preload_for`). `[]` turns all of it off. Dotted names only.
    pub preload: Vec<String>,
    /// The first engine's address (`sandbox.engine`); `None`: `DOCKER_HOST`,
    /// else the local socket.
    pub engine: Option<String>,
    /// Where runs go when the first environment cannot prepare a container
    /// (`sandbox.reserve`: an `engine`, a `runtime` or both).
    pub(crate) reserve: Option<Reserve>,
}

impl SandboxPolicy {
    /// The environments this policy's runs may use (see
    /// `sandbox::Environments`).
    pub fn environments(&self) -> Environments {
        Environments::new(self.engine.clone(), self.reserve.clone())
    }
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            image: DEFAULT_IMAGE.to_string(),
            limits: Limits::default(),
            network: Network::None,
            runtime: None,
            preload: DEFAULT_PRELOAD.iter().map(|m| m.to_string()).collect(),
            engine: None,
            reserve: None,
        }
    }
}

/// The keys of the `sandbox` section, in the order they are written.
const SANDBOX_KEYS: &[&str] = &[
    "image",
    "timeout",
    "memory",
    "cpus",
    "preload_cpus",
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
    "engine",
    "reserve",
];

impl Serialize for SandboxPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let l = &self.limits;
        let mut m = s.serialize_struct("SandboxPolicy", SANDBOX_KEYS.len())?;
        m.serialize_field("image", &self.image)?;
        m.serialize_field("timeout", &compute_bot_units::format_duration(l.timeout))?;
        m.serialize_field("memory", &l.memory)?;
        m.serialize_field("cpus", &l.cpus)?;
        match l.preload_cpus {
            Some(c) => m.serialize_field("preload_cpus", &c)?,
            None => m.serialize_field("preload_cpus", "host")?,
        }
        m.serialize_field("pids", &l.pids)?;
        m.serialize_field("stdout_cap", &l.stdout_cap)?;
        m.serialize_field("stderr_cap", &l.stderr_cap)?;
        m.serialize_field("tmpfs", &l.tmpfs)?;
        m.serialize_field("artifacts_max_files", &l.artifacts_max_files)?;
        m.serialize_field("artifacts_max_bytes", &l.artifacts_max_bytes)?;
        m.serialize_field("nofile", &l.nofile)?;
        m.serialize_field("fsize", &l.fsize)?;
        m.serialize_field("network", &self.network)?;
        match self.runtime {
            Some(runtime) => m.serialize_field("runtime", &runtime)?,
            None => m.skip_field("runtime")?,
        }
        m.serialize_field("preload", &self.preload)?;
        match &self.engine {
            Some(engine) => m.serialize_field("engine", engine)?,
            None => m.skip_field("engine")?,
        }
        match &self.reserve {
            Some(reserve) => m.serialize_field("reserve", reserve)?,
            None => m.skip_field("reserve")?,
        }
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
                        "preload_cpus" => l.preload_cpus = map.next_value::<PreloadCpus>()?.0,
                        "pids" => l.pids = map.next_value::<Pids>()?.0,
                        "stdout_cap" => l.stdout_cap = map.next_value()?,
                        "stderr_cap" => l.stderr_cap = map.next_value()?,
                        "tmpfs" => l.tmpfs = map.next_value()?,
                        "artifacts_max_files" => l.artifacts_max_files = map.next_value()?,
                        "artifacts_max_bytes" => l.artifacts_max_bytes = map.next_value()?,
                        "nofile" => l.nofile = map.next_value()?,
                        "fsize" => l.fsize = map.next_value()?,
                        "network" => s.network = map.next_value()?,
                        "runtime" => s.runtime = Some(map.next_value()?),
                        "preload" => s.preload = map.next_value::<Preload>()?.0,
                        "engine" => {
                            s.engine =
                                Some(map.next_value::<super::environment::EngineAddress>()?.0)
                        }
                        "reserve" => {
                            s.reserve =
                                Some(map.next_value::<super::environment::ReserveSection>()?.0)
                        }
                        "data_max_bytes" => {
                            return Err(de::Error::custom(
                                "`data_max_bytes` is not a sandbox key: /data holds the inputs, so its size is \
                                 `inputs.max_total_bytes`; set that instead",
                            ));
                        }
                        other => return Err(de::Error::unknown_field(other, SANDBOX_KEYS)),
                    }
                }
                if let Some(problem) = s.reserve.as_ref().and_then(|r| {
                    super::environment::same_as_first(s.engine.as_deref(), s.runtime, r)
                }) {
                    return Err(de::Error::custom(problem));
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
                compute_bot_units::format_duration(t)
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

/// `sandbox.preload_cpus`: `host` (every CPU of the host, the default) or
/// cores as for `cpus`: the quota while modules load, before any code runs.
struct PreloadCpus(Option<f64>);

impl<'de> Deserialize<'de> for PreloadCpus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Cores(f64),
            Word(String),
        }
        let advice = "write `host` (every CPU of the host while modules load; the default) or a number \
                      of cores greater than 0 and at most 64, e.g. `2`";
        match Raw::deserialize(d)? {
            Raw::Word(w) if w == "host" => Ok(PreloadCpus(None)),
            Raw::Cores(v) if v > 0.0 && v <= 64.0 => Ok(PreloadCpus(Some(v))),
            Raw::Word(w) => Err(de::Error::custom(format!(
                "preload_cpus `{w}` is not understood; {advice}"
            ))),
            Raw::Cores(v) => Err(de::Error::custom(format!(
                "preload_cpus `{v}` is out of range; {advice}"
            ))),
        }
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
