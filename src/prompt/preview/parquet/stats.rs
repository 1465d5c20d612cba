//! A column's missing values and range from its row groups' statistics
//! (`ColumnMetaData.statistics`), written as pandas prints them.

use super::thrift::T;
use super::{BOOLEAN, BYTE_ARRAY, DATE, DECIMAL, DOUBLE, FLOAT, INT32, INT64, Leaf, Missing, UTF8};

/// How a column's statistics are decoded and compared.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Int {
        signed: bool,
        bytes: usize,
    },
    Float32,
    Float64,
    Bool,
    /// Ticks since the epoch, this many per second.
    Time {
        per_second: i64,
        utc: bool,
    },
    /// Days since the epoch.
    Date,
    /// `big_endian`: a byte array's two's complement; else an INT32/INT64.
    Decimal {
        scale: i32,
        big_endian: bool,
    },
    Text,
}

/// A decoded bound, comparable within its kind.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Bound {
    I(i128),
    F(f64),
    B(Vec<u8>),
}

/// Missing values and `(min, max)` of one flat column from its chunks'
/// metadata. `pandas_written`: the file has pandas metadata, so a float
/// column's NaN values were written as nulls (pyarrow and fastparquet both
/// do), and `null_count` counts them.
pub(super) fn statistics(
    l: &Leaf,
    dtype: &str,
    chunks: &[&T],
    pandas_written: bool,
) -> (Missing, Option<(String, String)>) {
    let e = l.element;
    let physical = e.int(1).unwrap_or(-1);
    let mut nulls = Some(0u64);
    let mut nans = Some(0u64);
    for c in chunks {
        let st = c.get(12);
        nulls = nulls
            .zip(st.and_then(|s| s.int(3)))
            .map(|(a, b)| a + b.max(0) as u64);
        nans = nans
            .zip(st.and_then(|s| s.int(9)))
            .map(|(a, b)| a + b.max(0) as u64);
    }
    let float = matches!(physical, FLOAT | DOUBLE);
    let missing = match nulls {
        None => Missing::Unknown,
        Some(n) if float => match nans {
            Some(x) => Missing::Exactly(n + x),
            None if pandas_written => Missing::Exactly(n),
            None => Missing::AtLeast(n),
        },
        Some(n) => Missing::Exactly(n),
    };
    let range = kind(e, physical, dtype).and_then(|k| range(k, dtype, chunks));
    (missing, range)
}

/// The kind of a column's values, if its range is worth stating.
fn kind(e: &T, physical: i64, dtype: &str) -> Option<Kind> {
    let logical = e.get(10);
    let converted = e.int(6);
    if dtype == "category" {
        return None;
    }
    if let Some(ts) = logical.and_then(|l| l.get(8)) {
        let utc = ts.bool(1).unwrap_or(false);
        return (physical == INT64).then_some(Kind::Time {
            per_second: super::unit(ts).1,
            utc,
        });
    }
    let decimal = logical.and_then(|l| l.get(5));
    if decimal.is_some() || converted == Some(DECIMAL) {
        let scale = decimal.and_then(|d| d.int(1)).or(e.int(7)).unwrap_or(0);
        return Some(Kind::Decimal {
            scale: scale as i32,
            big_endian: !matches!(physical, INT32 | INT64),
        });
    }
    Some(match (physical, converted) {
        (INT32 | INT64, Some(DATE)) => {
            return (dtype.starts_with("datetime64")).then_some(Kind::Date);
        }
        (INT64, Some(9)) => Kind::Time {
            per_second: 1_000,
            utc: false,
        },
        (INT64, Some(10)) => Kind::Time {
            per_second: 1_000_000,
            utc: false,
        },
        (INT32 | INT64, Some(11..=14)) => Kind::Int {
            signed: false,
            bytes: if physical == INT32 { 4 } else { 8 },
        },
        (INT32 | INT64, None | Some(15..=18)) => Kind::Int {
            signed: true,
            bytes: if physical == INT32 { 4 } else { 8 },
        },
        (FLOAT, None) => Kind::Float32,
        (DOUBLE, None) => Kind::Float64,
        (BOOLEAN, None) => Kind::Bool,
        (BYTE_ARRAY, Some(UTF8)) if dtype == "object" => Kind::Text,
        (BYTE_ARRAY, None) if logical.and_then(|l| l.get(1)).is_some() => Kind::Text,
        _ => return None,
    })
}

/// The smallest and largest value over the chunks: every chunk with a
/// value must state both (an all-null chunk has none), else `None`.
fn range(k: Kind, dtype: &str, chunks: &[&T]) -> Option<(String, String)> {
    let mut lo: Option<Bound> = None;
    let mut hi: Option<Bound> = None;
    for c in chunks {
        let st = c.get(12)?;
        if st.int(3).is_some() && st.int(3) == c.int(5) {
            continue;
        }
        // The deprecated min/max are signed-ordered: right for signed
        // numbers (and times) only.
        let legacy = matches!(
            k,
            Kind::Int { signed: true, .. }
                | Kind::Float32
                | Kind::Float64
                | Kind::Time { .. }
                | Kind::Date
        );
        let (min, max) = match (st.bin(6), st.bin(5)) {
            (Some(a), Some(b)) => (a, b),
            _ if legacy => (st.bin(2)?, st.bin(1)?),
            _ => return None,
        };
        if st.bool(7) == Some(false) || st.bool(8) == Some(false) {
            return None;
        }
        let (a, b) = (decode(k, min)?, decode(k, max)?);
        if lo.as_ref().is_none_or(|l| a < *l) {
            lo = Some(a);
        }
        if hi.as_ref().is_none_or(|h| b > *h) {
            hi = Some(b);
        }
    }
    Some((show(k, dtype, &lo?)?, show(k, dtype, &hi?)?))
}

fn decode(k: Kind, b: &[u8]) -> Option<Bound> {
    let le = |n: usize| -> Option<i128> {
        let mut buf = [0u8; 8];
        buf[..n].copy_from_slice(b.get(..n)?);
        Some(if n == 4 {
            i128::from(i32::from_le_bytes(buf[..4].try_into().ok()?))
        } else {
            i128::from(i64::from_le_bytes(buf))
        })
    };
    Some(match k {
        Kind::Int { signed, bytes } => {
            let v = le(bytes)?;
            Bound::I(if signed || v >= 0 {
                v
            } else {
                v + (1i128 << (bytes * 8))
            })
        }
        Kind::Time { .. } => Bound::I(le(8)?),
        Kind::Date => Bound::I(le(4)?),
        Kind::Float32 => {
            Bound::F(f64::from(f32::from_le_bytes(b.get(..4)?.try_into().ok()?))).finite()?
        }
        Kind::Float64 => Bound::F(f64::from_le_bytes(b.get(..8)?.try_into().ok()?)).finite()?,
        Kind::Bool => Bound::I(i128::from(*b.first()? != 0)),
        Kind::Decimal { scale, big_endian } => {
            let v = match b.len() {
                4 | 8 if !big_endian => le(b.len())?,
                1..=16 if big_endian => {
                    // Big-endian two's complement (byte arrays).
                    let neg = b[0] & 0x80 != 0;
                    b.iter().fold(if neg { -1i128 } else { 0 }, |n, x| {
                        (n << 8) | i128::from(*x)
                    })
                }
                _ => return None,
            };
            // As fastparquet scales: times 10 ** -scale.
            Bound::F(v as f64 * 10f64.powi(-scale))
        }
        Kind::Text => Bound::B(b.to_vec()),
    })
}

impl Bound {
    /// `None` for a NaN bound (the spec says to ignore it).
    fn finite(self) -> Option<Bound> {
        match self {
            Bound::F(f) if f.is_nan() => None,
            b => Some(b),
        }
    }
}

/// A bound as pandas prints the value (`s.min()`).
fn show(k: Kind, dtype: &str, b: &Bound) -> Option<String> {
    let float_dtype = dtype.starts_with("float");
    Some(match (k, b) {
        (Kind::Text, Bound::B(s)) => {
            serde_json::to_string(&super::super::excerpt(&String::from_utf8_lossy(s), 30)).ok()?
        }
        (Kind::Time { per_second, utc }, Bound::I(v)) => {
            if dtype.contains(',') && !dtype.ends_with(", UTC]") {
                return None;
            }
            let t = timestamp(*v as i64, per_second)?;
            if utc && dtype.contains(", UTC]") {
                format!("{t}+00:00")
            } else {
                t
            }
        }
        (Kind::Date, Bound::I(d)) => {
            let day = chrono::DateTime::from_timestamp(i64::try_from(*d).ok()? * 86_400, 0)?;
            format!("{} 00:00:00", day.format("%Y-%m-%d"))
        }
        (Kind::Bool, Bound::I(v)) if float_dtype => py_float(*v as f64),
        (Kind::Bool, Bound::I(v)) => if *v != 0 { "True" } else { "False" }.into(),
        (_, Bound::I(v)) if float_dtype => py_float(*v as f64),
        (_, Bound::I(v)) => v.to_string(),
        (Kind::Float32, Bound::F(f)) => {
            // Shortest digits of the float32, as numpy prints a float32.
            py_float(format!("{}", *f as f32).parse().ok()?)
        }
        (_, Bound::F(f)) => py_float(*f),
        _ => return None,
    })
}

/// Ticks since the epoch as pandas prints a Timestamp: seconds, then
/// microseconds when there are any, nanoseconds when there are any.
fn timestamp(v: i64, per_second: i64) -> Option<String> {
    let secs = v.div_euclid(per_second);
    let ticks = v.rem_euclid(per_second);
    let nanos = ticks * (1_000_000_000 / per_second);
    let t = chrono::DateTime::from_timestamp(secs, 0)?;
    let base = t.format("%Y-%m-%d %H:%M:%S").to_string();
    Some(match nanos {
        0 => base,
        n if n % 1000 == 0 => format!("{base}.{:06}", n / 1000),
        n => format!("{base}.{n:09}"),
    })
}

/// A float as Python's `repr` writes it (`3.0`, `1e-07`, `1.5e+20`).
pub(crate) fn py_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{:e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let body = if exp >= 0 {
            let int_len = exp as usize + 1;
            let padded = format!("{digits:0<int_len$}");
            let (int, frac) = padded.split_at(int_len);
            format!("{int}.{}", if frac.is_empty() { "0" } else { frac })
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        return format!("{sign}{body}");
    }
    let m = if digits.len() > 1 {
        format!("{}.{}", &digits[..1], &digits[1..])
    } else {
        digits
    };
    format!(
        "{sign}{m}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_and_timestamps_are_written_as_python_and_pandas_write_them() {
        for (v, s) in [
            (3.0, "3.0"),
            (-2.5, "-2.5"),
            (1e-7, "1e-07"),
            (1.5e20, "1.5e+20"),
            (0.0001, "0.0001"),
            (123456.789, "123456.789"),
            (1e16, "1e+16"),
            (0.1, "0.1"),
        ] {
            assert_eq!(py_float(v), s, "{v}");
        }
        assert_eq!(timestamp(1, 1000).unwrap(), "1970-01-01 00:00:00.001000");
        assert_eq!(
            timestamp(1_704_164_645_000_000_000, 1_000_000_000).unwrap(),
            "2024-01-02 03:04:05"
        );
        assert_eq!(
            timestamp(-1, 1_000_000_000).unwrap(),
            "1969-12-31 23:59:59.999999999"
        );
    }
}
