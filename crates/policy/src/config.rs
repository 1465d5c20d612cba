//! The policy: one value holding every section, with safe defaults; the
//! small sections that belong to no other file (`attempts`, `model`,
//! `version`); what crosses sections (the limits and rules the sandbox is
//! given, who may do what).
//!
//! Each section lives beside what it decides: `who`/`escalation` in
//! `authorize`, `sandbox` in `sandbox`, `inputs` in `inputs`, `code` in
//! `code`, `output` in `output`; the default lists in `defaults`; reading the
//! file (and its errors) in `reader`.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::authorize::{self, Act, Actor, Authorization, Escalation, Who};
use super::code::CodePolicy;
use super::counted::counted;
use super::inputs::Inputs;
use super::output::Output;
use super::prices::Prices;
use super::sandbox::SandboxPolicy;
use super::session::Session;
use compute_bot_sandbox::{Limits, RuntimeRules};
use compute_bot_units::ByteSize;

/// The most generate/repair attempts a policy may allow.
const MAX_ATTEMPTS: u8 = 10;

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
        let n = counted(
            d,
            "attempts",
            MAX_ATTEMPTS,
            "each attempt is a model call and a sandbox run",
        )?;
        Ok(Attempts::new(n).expect("counted keeps it in range"))
    }
}

/// The explanation's deadline when the policy names none.
/// A careful model writes its 2 to 4 sentences in 150 to 200 tokens, and
/// one that reasons first spends several hundred more before them: up to
/// the bot's `explain`'s 1,000-token cap at about 40 tokens a second, with
/// the time to its first token and a retry, is about 45 s.
const EXPLAIN_TIMEOUT: Duration = Duration::from_secs(45);
/// How long the Action waits for the explanation before it posts the answer
/// with the template's when the policy names none: a quick model's 2 to 4
/// sentences take a few seconds, so most answers come with the model's words
/// at once, and none waits longer than this for a slow one.
const EXPLAIN_POST_AFTER: Duration = Duration::from_secs(10);
/// The range of `explain.timeout` and of `explain.post_after`.
const EXPLAIN_TIMEOUTS: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(600);

/// `explain`: whether the bot asks the model to explain the result in
/// words, and how long it waits for that explanation. `explain: true` /
/// `explain: false` is short for `enabled` with the default timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Explain {
    /// Ask the model (else the deterministic template explains).
    pub enabled: bool,
    /// How long the explanation may take, retries included (`45s` unless
    /// set, 1s..=10m; reasoning models need more). After it the template
    /// explains and the result is not held back.
    #[serde(with = "compute_bot_units::human_duration")]
    pub timeout: Duration,
    /// On GitHub: how long the answer waits for the explanation before it is
    /// posted with the template's and a note (`10s` unless set, 1s..=10m);
    /// the comment is edited when the model's arrives within `timeout`. At
    /// or above `timeout` the answer waits for it, as on the command line.
    #[serde(with = "compute_bot_units::human_duration")]
    pub post_after: Duration,
}

impl Default for Explain {
    fn default() -> Self {
        Explain {
            enabled: true,
            timeout: EXPLAIN_TIMEOUT,
            post_after: EXPLAIN_POST_AFTER,
        }
    }
}

/// The keys of the `explain` section.
const EXPLAIN_KEYS: &[&str] = &["enabled", "timeout", "post_after"];

impl<'de> Deserialize<'de> for Explain {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Section;
        impl<'de> de::Visitor<'de> for Section {
            type Value = Explain;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`true`, `false` or a section with `enabled`, `timeout` and `post_after` (e.g. `timeout: 60s`)")
            }
            fn visit_bool<E: de::Error>(self, enabled: bool) -> Result<Explain, E> {
                Ok(Explain {
                    enabled,
                    ..Explain::default()
                })
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Explain, A::Error> {
                let mut e = Explain::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "enabled" => e.enabled = map.next_value()?,
                        "timeout" => e.timeout = map.next_value::<ExplainTimeout>()?.0,
                        "post_after" => e.post_after = map.next_value::<ExplainPostAfter>()?.0,
                        other => return Err(de::Error::unknown_field(other, EXPLAIN_KEYS)),
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_any(Section)
    }
}

/// `explain.timeout`: a duration, 1s..=10m.
struct ExplainTimeout(Duration);

impl<'de> Deserialize<'de> for ExplainTimeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = compute_bot_units::human_duration::deserialize(d)?;
        if !EXPLAIN_TIMEOUTS.contains(&t) {
            return Err(de::Error::custom(format!(
                "explain.timeout `{}` is out of range; write a duration from 1s to 10m, e.g. `60s` for a reasoning model",
                compute_bot_units::format_duration(t)
            )));
        }
        Ok(ExplainTimeout(t))
    }
}

/// `explain.post_after`: a duration, 1s..=10m.
struct ExplainPostAfter(Duration);

impl<'de> Deserialize<'de> for ExplainPostAfter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = compute_bot_units::human_duration::deserialize(d)?;
        if !EXPLAIN_TIMEOUTS.contains(&t) {
            return Err(de::Error::custom(format!(
                "explain.post_after `{}` is out of range; write a duration from 1s to 10m, e.g. `10s`",
                compute_bot_units::format_duration(t)
            )));
        }
        Ok(ExplainPostAfter(t))
    }
}

impl Explain {
    /// How long a front end that can edit its answer waits for the model's
    /// explanation before it posts the template's: `None` when it waits the
    /// whole `timeout` (`post_after` at or above it).
    pub fn early_post(&self) -> Option<Duration> {
        (self.post_after < self.timeout).then_some(self.post_after)
    }
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

/// `model`: what the model provider may see, and what its tokens cost.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelPolicy {
    /// How much of the data leaves for the model (`preview`, `schema`, `none`).
    pub data: DataLevel,
    /// Dollars per million tokens, for the cost an answer shows (optional).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
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
    /// Whether the bot explains the result in words next to the numbers,
    /// and how long it waits for the model's explanation.
    pub explain: Explain,
    /// Who may approve escalated code.
    pub escalation: Escalation,
    /// What the model provider may see of the data.
    pub model: ModelPolicy,
    /// How model-written code runs as steps in one sandbox.
    pub session: Session,
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
            explain: Explain::default(),
            escalation: Escalation::default(),
            model: ModelPolicy::default(),
            session: Session::default(),
            origin: None,
        }
    }
}

/// What the sandbox is given: limits (from the `sandbox` and `inputs`
/// sections), the image and the runner's rules (from `code`).
impl Policy {
    /// The resource limits the sandbox enforces: the `sandbox` section's,
    /// with /data sized by `inputs.max_total_bytes`.
    pub fn limits(&self) -> Limits {
        Limits {
            data_max_bytes: self.inputs.max_total_bytes,
            ..self.sandbox.limits.clone()
        }
    }

    /// Sets the sandbox limits (e.g. after [`Policy::tightened_limits`]).
    pub fn set_limits(&mut self, l: &Limits) {
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
        let dur = |d: &Duration| compute_bot_units::format_duration(*d);
        let size = |b: &ByteSize| b.to_string();
        let num = |n: &dyn fmt::Display| n.to_string();
        let out = Limits {
            timeout: pick!(timeout, dur),
            memory: pick!(memory, size),
            cpus: pick!(cpus, |c: &f64| num(c)),
            // The preload's cap is the policy's alone (no flag asks for it).
            preload_cpus: p.preload_cpus,
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
}

impl Policy {
    /// Who may do what: the policy's one decision (its body is in
    /// `authorize.rs`, and nowhere else).
    ///
    /// In two steps, so that what needs no lookup costs none. This call
    /// decides what the trigger shows, for every act: an edited comment or
    /// a bot account is [`Authorization::Ignore`]d unless `who` allows them.
    /// The rest depends on the repository permission and is decided by
    /// [`PermissionCheck::decide`](super::PermissionCheck::decide) from the section that governs the act
    /// (`who` for [`Act::Run`], `escalation` for [`Act::Approve`] and
    /// [`Act::Deny`]): being listed when the section lists logins
    /// (case-insensitive, as on GitHub) and at least its minimum permission
    /// (no access is never enough).
    pub fn authorize(&self, actor: &Actor, act: Act) -> Authorization<'_> {
        authorize::authorize(&self.who, &self.escalation, actor, act)
    }
}
