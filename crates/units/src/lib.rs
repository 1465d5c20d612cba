//! Human-readable sizes and durations (`256MiB`, `64KiB`, `10s`, `1500ms`).
//!
//! Policy files and command-line flags share these parsers so that the same
//! spelling means the same thing everywhere; reports and comments show
//! numbers with the same rules ([`display_number`]).

#![deny(missing_docs)]

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number of bytes, written as `512`, `64KiB`, `256MiB`, `1GiB`, `10MB`, `1.5GiB`;
/// the field is that number (`ByteSize(1000)` is 1,000 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// `n` kibibytes.
    pub const fn kib(n: u64) -> Self {
        ByteSize(n * 1024)
    }
    /// `n` mebibytes.
    pub const fn mib(n: u64) -> Self {
        ByteSize(n * 1024 * 1024)
    }
    /// The number of bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

/// Why a size or duration could not be read; the message says what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(String);

impl FromStr for ByteSize {
    type Err = UnitError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let unit = unit.trim();
        let mult: u64 = match unit.to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" => 1000,
            "ki" | "kib" => 1 << 10,
            "m" | "mb" => 1_000_000,
            "mi" | "mib" => 1 << 20,
            "g" | "gb" => 1_000_000_000,
            "gi" | "gib" => 1 << 30,
            _ => {
                return Err(UnitError(format!(
                    "`{s}` is not a size: unknown unit `{unit}`; write e.g. `512`, `64KiB`, `256MiB` or `1GiB`"
                )));
            }
        };
        let value: f64 = num.parse().map_err(|_| {
            UnitError(format!(
                "`{s}` is not a size: write a number and a unit, e.g. `256MiB`"
            ))
        })?;
        let bytes = value * mult as f64;
        if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
            return Err(UnitError(format!("`{s}` is out of range for a size")));
        }
        Ok(ByteSize(bytes.round() as u64))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, size) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
            if b >= size && b.is_multiple_of(size) {
                return write!(f, "{}{unit}", b / size);
            }
        }
        if b >= 1 << 20 {
            return write!(f, "{:.1}MiB", b as f64 / (1u64 << 20) as f64);
        }
        write!(f, "{b}B")
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(ByteSize(n)),
            Raw::S(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Parses a duration written as `10s`, `1500ms`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        UnitError(format!(
            "`{s}` is not a duration: write a number and a unit, e.g. `10s` or `500ms`"
        ))
    })?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(UnitError(format!(
                "`{s}` is not a duration: unknown unit `{other}`; use ms, s, m or h"
            )));
        }
    };
    if !secs.is_finite() || !(0.0..=7.0 * 24.0 * 3600.0).contains(&secs) {
        return Err(UnitError(format!("`{s}` is out of range for a duration")));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats a duration the way [`parse_duration`] reads it back (`10s`, `1500ms`).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Serde adapter for durations written as human-readable strings.
pub mod human_duration {
    use super::*;

    /// Serializes as `10s` / `1500ms`.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    /// Accepts `10s`, `1500ms`, `2m` or a bare number of seconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(f64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => parse_duration(&n.to_string()).map_err(serde::de::Error::custom),
            Raw::S(s) => parse_duration(&s).map_err(serde::de::Error::custom),
        }
    }
}

/// Significant digits numbers are shown with in text (tables, the answer
/// line, chart values). The JSON (report, `result` output, JSON blocks)
/// keeps every digit.
pub const SIGNIFICANT_DIGITS: usize = 4;

/// A number for people: integers as they are; other values to
/// [`SIGNIFICANT_DIGITS`] significant digits without trailing zeros, never
/// dropping digits before the decimal point (`0.08478968314121142` →
/// `0.08479`, `12345.678` → `12346`); very small or large values in
/// scientific notation (`8.479e-7`).
pub fn readable_number(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{}", v as i64);
    }
    let mag = v.abs().log10().floor() as i32;
    if !(-4..15).contains(&mag) {
        let t = format!("{:.*e}", SIGNIFICANT_DIGITS - 1, v);
        let (m, e) = t.split_once('e').unwrap_or((&t, "0"));
        let m = if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.')
        } else {
            m
        };
        return format!("{m}e{e}");
    }
    let decimals = (SIGNIFICANT_DIGITS as i32 - 1 - mag).max(0) as usize;
    let t = format!("{v:.decimals$}");
    let t = if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    };
    if t == "-0" { "0".into() } else { t }
}

/// Numbers from this magnitude on are written with thousands separators
/// (`1,204`); a year is a [`NumberKind::Label`] and stays `2026`.
const GROUP_FROM: f64 = 1_000.0;

/// What a value's key says about how people write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NumberKind {
    /// A quantity: grouped, to [`SIGNIFICANT_DIGITS`] significant digits.
    #[default]
    Plain,
    /// An amount of money (`revenue`, `price`, `fare`): to the cent.
    Money,
    /// A name that is a number (`id`, `year`, `issue`): as written.
    Label,
}

/// Words of a key that name an amount of money.
const MONEY_WORDS: [&str; 18] = [
    "revenue", "sales", "price", "prices", "cost", "costs", "amount", "spend", "spent", "profit",
    "income", "usd", "eur", "gbp", "fare", "salary", "budget", "dollars",
];
/// Words of a key that name a number used as a name.
const LABEL_WORDS: [&str; 15] = [
    "id", "year", "number", "no", "zip", "code", "issue", "pr", "sha", "month", "week", "quarter",
    "day", "period", "date",
];

impl NumberKind {
    /// The kind a key names, by its words (`total_revenue` → money,
    /// `issue_id` → a label).
    pub fn of_key(key: &str) -> NumberKind {
        let lower = key.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        if words.last().is_some_and(|w| LABEL_WORDS.contains(w)) {
            NumberKind::Label
        } else if words.iter().any(|w| MONEY_WORDS.contains(w)) {
            NumberKind::Money
        } else {
            NumberKind::Plain
        }
    }
}

/// A number as people write it: thousands separators from 1,000 on
/// (`111,797.4`); decimals a value has up to two kept (`7.75`, `12.4`);
/// other values to [`SIGNIFICANT_DIGITS`] significant digits, never cut
/// inside the integer part (`12,346`), a share stays a share (`0.08331`);
/// money to the cent (`111,797.40`); very small or large values in
/// scientific notation (`1.05e-19`); a [`NumberKind::Label`] as written.
pub fn display_number(v: f64, kind: NumberKind) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    if kind == NumberKind::Label {
        return readable_number(v);
    }
    let text = if kind == NumberKind::Money && (0.01..1e15).contains(&v.abs()) {
        format!("{v:.2}")
    } else if v.fract() != 0.0 && (1.0..1e15).contains(&v.abs()) && has_cents(v) {
        let t = format!("{v:.2}");
        t.trim_end_matches('0').to_string()
    } else {
        readable_number(v)
    };
    if v.abs() >= GROUP_FROM && !text.contains('e') {
        group_thousands(&text)
    } else {
        text
    }
}

/// True when `v` has at most two decimals (up to the float's own error):
/// `111797.40000000001` has, `5.216666` has not.
fn has_cents(v: f64) -> bool {
    let cents = v * 100.0;
    (cents - cents.round()).abs() <= 1e-9 * cents.abs().max(1.0)
}

/// [`display_number`] of a JSON number (integers exact, with separators).
pub fn display_json_number(n: &serde_json::Number, kind: NumberKind) -> String {
    if n.is_i64() || n.is_u64() {
        let t = n.to_string();
        let big = t.trim_start_matches('-').len() > 3;
        return if big && kind != NumberKind::Label {
            group_thousands(&t)
        } else {
            t
        };
    }
    n.as_f64()
        .map(|v| display_number(v, kind))
        .unwrap_or_else(|| n.to_string())
}

/// True when [`display_json_number`] shows fewer digits than `n` has.
pub fn is_rounded(n: &serde_json::Number, kind: NumberKind) -> bool {
    let shown = display_json_number(n, kind).replace(',', "");
    if n.is_i64() || n.is_u64() {
        return shown != n.to_string();
    }
    shown.parse::<f64>().ok() != n.as_f64()
}

/// `v` to `decimals` decimals with thousands separators (`1,204.50`): a
/// percentage or a rate whose decimals a reader compares.
pub fn display_fixed(v: f64, decimals: usize) -> String {
    let t = format!("{v:.decimals$}");
    if !v.is_finite() {
        return v.to_string();
    }
    let t = if t
        .trim_start_matches('-')
        .trim_start_matches(['0', '.'])
        .is_empty()
    {
        t.trim_start_matches('-').to_string()
    } else {
        t
    };
    if v.abs() >= GROUP_FROM {
        group_thousands(&t)
    } else {
        t
    }
}

/// `-1234567.5` → `-1,234,567.5`: separators in the integer part.
fn group_thousands(t: &str) -> String {
    let (sign, rest) = match t.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", t),
    };
    let (int, frac) = match rest.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (rest, None),
    };
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_people_write_them() {
        use NumberKind::{Label, Money, Plain};
        let n = |v: serde_json::Value, k| match v {
            serde_json::Value::Number(n) => display_json_number(&n, k),
            _ => unreachable!(),
        };
        // Money: separators and cents, also when the float is off by its error.
        assert_eq!(n(serde_json::json!(111797.4), Money), "111,797.40");
        assert_eq!(n(serde_json::json!(111797.40000000001), Plain), "111,797.4");
        assert_eq!(n(serde_json::json!(32.204207968574636), Money), "32.20");
        assert_eq!(n(serde_json::json!(-1234.5), Money), "-1,234.50");
        assert_eq!(n(serde_json::json!(-98765.25), Plain), "-98,765.25");
        // Shares stay shares, to 4 significant digits.
        assert_eq!(n(serde_json::json!(0.08330713612071676), Plain), "0.08331");
        assert_eq!(n(serde_json::json!(0.5), Money), "0.50");
        assert_eq!(n(serde_json::json!(-0.0369), Plain), "-0.0369");
        // Counts and large integers: exact, grouped.
        assert_eq!(n(serde_json::json!(3035), Plain), "3,035");
        assert_eq!(n(serde_json::json!(999), Plain), "999");
        assert_eq!(n(serde_json::json!(12345), Plain), "12,345");
        assert_eq!(n(serde_json::json!(-1234567), Plain), "-1,234,567");
        assert_eq!(
            n(serde_json::json!(u64::MAX), Plain),
            "18,446,744,073,709,551,615"
        );
        assert_eq!(n(serde_json::json!(3035.0), Plain), "3,035");
        assert_eq!(n(serde_json::json!(8120.0), Money), "8,120.00");
        assert_eq!(n(serde_json::json!(8120), Money), "8,120");
        assert_eq!(n(serde_json::json!(1234567.0), Plain), "1,234,567");
        // Significant digits never cut into the integer part.
        assert_eq!(n(serde_json::json!(12345.678), Plain), "12,346");
        assert_eq!(n(serde_json::json!(5.216666666666667), Plain), "5.217");
        assert_eq!(n(serde_json::json!(7.75), Plain), "7.75");
        // Tiny p-values and huge values in scientific notation.
        assert_eq!(n(serde_json::json!(1.05e-19), Plain), "1.05e-19");
        assert_eq!(n(serde_json::json!(1.2e-5), Plain), "1.2e-5");
        assert_eq!(n(serde_json::json!(6.02214076e23), Money), "6.022e23");
        // Numbers used as names stay as written.
        assert_eq!(n(serde_json::json!(40213), Label), "40213");
        assert_eq!(n(serde_json::json!(2026), Label), "2026");
        // Not finite (no JSON has them, a computed float may).
        assert_eq!(display_number(f64::NAN, Plain), "NaN");
        assert_eq!(display_number(f64::NEG_INFINITY, Money), "-inf");
    }

    #[test]
    fn fixed_decimals_are_grouped_and_never_negative_zero() {
        assert_eq!(display_fixed(19.047619, 2), "19.05");
        assert_eq!(display_fixed(-1234.5, 2), "-1,234.50");
        assert_eq!(display_fixed(-0.001, 2), "0.00");
        assert_eq!(display_fixed(f64::INFINITY, 2), "inf");
    }

    #[test]
    fn keys_name_money_and_labels_by_their_words() {
        assert_eq!(NumberKind::of_key("total_revenue"), NumberKind::Money);
        assert_eq!(NumberKind::of_key("Fare"), NumberKind::Money);
        assert_eq!(NumberKind::of_key("issue_id"), NumberKind::Label);
        assert_eq!(NumberKind::of_key("year"), NumberKind::Label);
        assert_eq!(NumberKind::of_key("fiscal_quarter"), NumberKind::Label);
        // `paid` is not `id`, `salesperson` not `sales`.
        assert_eq!(NumberKind::of_key("paid"), NumberKind::Plain);
        assert_eq!(NumberKind::of_key("salesperson"), NumberKind::Plain);
    }

    #[test]
    fn a_number_is_rounded_only_when_digits_are_dropped() {
        let r = |v: serde_json::Value, k| match v {
            serde_json::Value::Number(n) => is_rounded(&n, k),
            _ => unreachable!(),
        };
        assert!(!r(serde_json::json!(111797.4), NumberKind::Money));
        assert!(!r(serde_json::json!(1234567), NumberKind::Plain));
        assert!(!r(serde_json::json!(7.75), NumberKind::Plain));
        assert!(r(serde_json::json!(0.08330713612071676), NumberKind::Plain));
        assert!(r(serde_json::json!(32.204207968574636), NumberKind::Money));
    }

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!("256MiB".parse::<ByteSize>().unwrap(), ByteSize(256 << 20));
        assert_eq!("64KiB".parse::<ByteSize>().unwrap(), ByteSize(65536));
        assert_eq!("10MB".parse::<ByteSize>().unwrap(), ByteSize(10_000_000));
        assert_eq!("1.5GiB".parse::<ByteSize>().unwrap(), ByteSize(3 << 29));
        assert_eq!("512".parse::<ByteSize>().unwrap(), ByteSize(512));
        let err = "12 parsecs".parse::<ByteSize>().unwrap_err().to_string();
        assert!(err.contains("unknown unit `parsecs`"), "{err}");
        assert!("MiB".parse::<ByteSize>().is_err());
    }

    #[test]
    fn sizes_display_round_trips() {
        for s in ["256MiB", "64KiB", "1GiB", "100B"] {
            assert_eq!(s.parse::<ByteSize>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn durations_parse_and_format() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(
            parse_duration("1500ms").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert!(parse_duration("10 fortnights").is_err());
        assert!(parse_duration("-1s").is_err());
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format_duration(Duration::from_secs(10)), "10s");
    }
}
