//! `session`: how model-written code runs as steps in one sandbox, like the
//! cells of a notebook: the most steps, the code time of the whole session
//! and the longest wait for the model between steps (the container is
//! frozen while it waits).

use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use compute_bot_units::format_duration;

/// The most steps a policy may allow.
const MAX_STEPS: u8 = 20;
/// The range of `session.code_time`.
const CODE_TIMES: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(30 * 60);
/// The range of `session.model_wait`.
const MODEL_WAITS: std::ops::RangeInclusive<Duration> =
    Duration::from_secs(1)..=Duration::from_secs(10 * 60);

/// `session`: the steps of one request in one container and interpreter.
/// `max_steps: 1` is one program per request, as before sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Session {
    /// The most steps of one request (1..=20; 6 unless set): look steps,
    /// the final step, refused and failed steps all count. It is the
    /// request's repair budget too (`attempts` is for one-program runs).
    pub max_steps: MaxSteps,
    /// The code time of the whole session, summed over its steps (each
    /// step also keeps `sandbox.timeout`); 100ms..=30m, `60s` unless set.
    #[serde(serialize_with = "compute_bot_units::human_duration::serialize")]
    #[serde(deserialize_with = "code_time")]
    pub code_time: Duration,
    /// The longest wait for the model between two steps while the
    /// container is frozen; 1s..=10m, `120s` unless set.
    #[serde(serialize_with = "compute_bot_units::human_duration::serialize")]
    #[serde(deserialize_with = "model_wait")]
    pub model_wait: Duration,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            max_steps: MaxSteps(6),
            code_time: Duration::from_secs(60),
            model_wait: Duration::from_secs(120),
        }
    }
}

impl Session {
    /// True when model-written code runs as steps (`max_steps` above 1).
    pub fn in_steps(&self) -> bool {
        self.max_steps.get() > 1
    }
}

/// A number of steps, 1..=20.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct MaxSteps(u8);

impl MaxSteps {
    /// The number of steps.
    pub fn get(self) -> u8 {
        self.0
    }
}

impl<'de> Deserialize<'de> for MaxSteps {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::counted::counted(
            d,
            "session.max_steps",
            MAX_STEPS,
            "each step is a model call and a run in the session's container; 1 runs one program per request",
        )
        .map(MaxSteps)
    }
}

/// A duration within `range`, or an error naming `field` and the range.
fn within<'de, D: Deserializer<'de>>(
    d: D,
    field: &str,
    range: std::ops::RangeInclusive<Duration>,
) -> Result<Duration, D::Error> {
    let t = compute_bot_units::human_duration::deserialize(d)?;
    if !range.contains(&t) {
        return Err(de::Error::custom(format!(
            "session.{field} `{}` is out of range; write a duration from {} to {}",
            format_duration(t),
            format_duration(*range.start()),
            format_duration(*range.end()),
        )));
    }
    Ok(t)
}

/// `session.code_time`, within its range.
fn code_time<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    within(d, "code_time", CODE_TIMES)
}

/// `session.model_wait`, within its range.
fn model_wait<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    within(d, "model_wait", MODEL_WAITS)
}
