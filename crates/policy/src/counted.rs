//! A count the policy file gives (`attempts`, `session.max_steps`): a whole
//! number from 1 to a maximum, read with errors that name the field, the
//! range and what one more of it costs.

use serde::Deserialize;
use serde::de::{self, Deserializer};

/// A whole number from 1 to `max` for `field`; the errors name the field,
/// the range and `what` one of them costs.
pub(crate) fn counted<'de, D: Deserializer<'de>>(
    d: D,
    field: &str,
    max: u8,
    what: &str,
) -> Result<u8, D::Error> {
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
                "{field} `{s}` is not a number; write a number from 1 to {max}"
            )));
        }
    };
    u8::try_from(n)
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            de::Error::custom(format!(
                "{field} `{n}` is out of range; write a number from 1 to {max} ({what})"
            ))
        })
}
