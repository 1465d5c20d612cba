//! Parquet files: the column facts from the footer alone (the Thrift
//! `FileMetaData` at the file's end, read by [`thrift`]): the row count,
//! each column's dtype as `pandas.read_parquet` gives it in the sandbox
//! (fastparquet, with pandas' `pandas_nulls=False`), its missing values
//! (the row groups' `null_count`) and its smallest and largest value (their
//! `min_value`/`max_value`). No data page is read, so no value is shown and
//! no distinct count is known. `tests/sandbox/previews.rs` checks each fact
//! against pandas itself on files pandas and fastparquet write.

mod thrift;

use serde_json::Value;
use thrift::T;

/// Most bytes of a footer read (a footer of thousands of row groups).
pub(crate) const MAX_FOOTER: usize = 16 * 1024 * 1024;

/// Parquet physical types (`parquet.thrift` `Type`).
const BOOLEAN: i64 = 0;
const INT32: i64 = 1;
const INT64: i64 = 2;
const INT96: i64 = 3;
const FLOAT: i64 = 4;
const DOUBLE: i64 = 5;
const BYTE_ARRAY: i64 = 6;

/// Converted types (`ConvertedType`) that decide a dtype.
const UTF8: i64 = 0;
const DECIMAL: i64 = 5;
const DATE: i64 = 6;

/// The footer of a Parquet file whose last bytes are `tail` (at least the
/// footer and its 8-byte trailer), or why it cannot be read.
pub(crate) fn footer(tail: &[u8]) -> Result<T, String> {
    let n = tail.len();
    if n < 12 || &tail[n - 4..] != b"PAR1" {
        return Err(if tail.ends_with(b"PARE") {
            "its footer is encrypted".into()
        } else {
            "it does not end with the Parquet trailer".into()
        });
    }
    let len = u32::from_le_bytes(tail[n - 8..n - 4].try_into().unwrap_or_default()) as usize;
    if len > n - 8 {
        return Err(format!(
            "its footer of {len} bytes is longer than the part read"
        ));
    }
    thrift::read_struct(&tail[n - 8 - len..n - 8])
}

/// The length of the footer a Parquet file's last 8 bytes announce.
pub(crate) fn footer_len(last8: &[u8]) -> Option<usize> {
    (last8.len() == 8 && &last8[4..] == b"PAR1")
        .then(|| u32::from_le_bytes(last8[..4].try_into().unwrap_or_default()) as usize)
}

/// What the footer says of one column of the DataFrame.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Column {
    pub name: String,
    /// The dtype pandas prints (`df.dtypes`).
    pub dtype: String,
    pub missing: Missing,
    /// The smallest and largest value as pandas prints them.
    pub range: Option<(String, String)>,
}

/// A column's missing values as the footer knows them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Missing {
    Exactly(u64),
    /// Nulls; NaN values (missing to pandas too) may come on top.
    AtLeast(u64),
    /// A row group has no `null_count`.
    Unknown,
}

/// The file as pandas reads it: rows, columns, index columns, row groups,
/// the writer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    pub rows: u64,
    pub columns: Vec<Column>,
    /// Columns pandas makes the DataFrame's index (pandas metadata).
    pub index: Vec<String>,
    pub row_groups: usize,
    pub created_by: String,
}

/// One leaf of the schema, with what its row groups' statistics say.
struct Leaf<'a> {
    element: &'a T,
    /// Position among the top-level columns (the footer's column chunks
    /// are per leaf; fastparquet reads chunk `i` for top-level column `i`).
    top: usize,
    nested: bool,
}

/// The table a footer describes.
pub(crate) fn table(meta: &T) -> Result<Table, String> {
    let schema = meta.list(2);
    let root = schema.first().ok_or("the footer has no schema")?;
    let pandas: Value = meta
        .list(5)
        .iter()
        .find(|kv| kv.text(1).as_deref() == Some("pandas"))
        .and_then(|kv| kv.text(2))
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    let created_by = meta.text(6).unwrap_or_default();
    let row_groups = meta.list(4);
    let tops = top_level(schema, root.int(5).unwrap_or(0) as usize)?;
    let index: Vec<String> = pandas["index_columns"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut columns = Vec::new();
    let mut leaf = 0;
    for (top, (element, leaves)) in tops.iter().enumerate() {
        let first = leaf;
        leaf += leaves;
        let name = element.text(4).unwrap_or_default();
        if index.contains(&name) {
            continue;
        }
        let l = Leaf {
            element,
            top,
            nested: *leaves != 1 || element.get(5).is_some(),
        };
        let md = pandas_column(&pandas, &name);
        let dtype = dtype_of(&l, md, row_groups, &created_by);
        let chunks: Vec<&T> = row_groups
            .iter()
            .filter_map(|rg| rg.list(1).get(first)?.get(3))
            .collect();
        let stats = (!l.nested && chunks.len() == row_groups.len())
            .then(|| statistics(&l, &dtype, &chunks, !pandas.is_null()));
        let (missing, range) = stats.unwrap_or((Missing::Unknown, None));
        columns.push(Column {
            name,
            dtype,
            missing,
            range,
        });
    }
    Ok(Table {
        rows: meta.int(3).unwrap_or(0).max(0) as u64,
        columns,
        index,
        row_groups: row_groups.len(),
        created_by,
    })
}

/// The top-level schema elements with the number of leaves under each.
fn top_level(schema: &[T], children: usize) -> Result<Vec<(&T, usize)>, String> {
    let mut out = Vec::new();
    let mut at = 1;
    for _ in 0..children {
        let element = schema.get(at).ok_or("the schema ends early")?;
        let (next, leaves) = subtree(schema, at, 0)?;
        out.push((element, leaves));
        at = next;
    }
    Ok(out)
}

/// The index after the subtree at `at`, and its leaves.
fn subtree(schema: &[T], at: usize, depth: usize) -> Result<(usize, usize), String> {
    let e = schema.get(at).ok_or("the schema ends early")?;
    if depth > 32 {
        return Err("the schema nests too deep".into());
    }
    let children = e.int(5).unwrap_or(0).max(0) as usize;
    if children == 0 {
        return Ok((at + 1, 1));
    }
    let (mut next, mut leaves) = (at + 1, 0);
    for _ in 0..children {
        let (n, l) = subtree(schema, next, depth + 1)?;
        next = n;
        leaves += l;
    }
    Ok((next, leaves))
}

/// The pandas metadata entry of column `name`.
fn pandas_column<'a>(pandas: &'a Value, name: &str) -> Option<&'a Value> {
    pandas["columns"]
        .as_array()?
        .iter()
        .find(|c| c["name"].as_str() == Some(name))
}

/// The dtype fastparquet gives a column (`converted_types.typemap`, then
/// `ParquetFile._dtypes` with pandas' `pandas_nulls=False`, then its
/// categories).
fn dtype_of(l: &Leaf, md: Option<&Value>, row_groups: &[T], created_by: &str) -> String {
    if l.nested {
        return "object".into();
    }
    let e = l.element;
    let numpy = md.and_then(|m| m["numpy_type"].as_str()).unwrap_or("");
    let pandas = md.and_then(|m| m["pandas_type"].as_str()).unwrap_or("");
    if pandas == "categorical" && categorical(l, row_groups, created_by) {
        return "category".into();
    }
    for t in [numpy, pandas] {
        if NULLABLE.contains(&t) {
            return t.into();
        }
    }
    let base = typemap(e, numpy);
    if base.starts_with("datetime64") {
        let mut dt = if md.is_some() {
            numpy.to_string()
        } else {
            base
        };
        if let Some(tz) = md
            .and_then(|m| m["metadata"]["timezone"].as_str())
            .filter(|_| !dt.contains(','))
        {
            dt = format!("{}, {tz}]", dt.trim_end_matches(']'));
        }
        return dt;
    }
    if NUMPY_NULLABLE.contains(&base.as_str()) {
        if numpy.contains("int") || numpy.contains("bool") {
            return base;
        }
        let nulls = row_groups.iter().any(|rg| {
            rg.int(3) != Some(0)
                && match rg.list(1).get(l.top).and_then(|c| c.get(3)?.get(12)) {
                    None => true,
                    Some(st) => st.int(3).is_some_and(|n| n != 0),
                }
        });
        if nulls {
            return "float64".into();
        }
    }
    base
}

/// pandas' nullable dtypes fastparquet keeps from the pandas metadata.
const NULLABLE: [&str; 9] = [
    "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "boolean",
];
/// numpy dtypes that cannot hold a missing value.
const NUMPY_NULLABLE: [&str; 9] = [
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
];

/// fastparquet's `typemap`: the logical type, the converted type, the
/// physical type.
fn typemap(e: &T, numpy: &str) -> String {
    if let Some(ts) = e.get(10).and_then(|lt| lt.get(8)) {
        return format!("datetime64[{}]", unit(ts).0);
    }
    let Some(converted) = e.int(6) else {
        return match e.int(1) {
            Some(INT32) => "int32",
            Some(INT64) => "int64",
            Some(FLOAT) => "float32",
            Some(DOUBLE) => "float64",
            Some(BOOLEAN) => "bool",
            Some(INT96) => "datetime64[ns]",
            _ => "object",
        }
        .into();
    };
    if numpy.contains("time") {
        return numpy.into();
    }
    match converted {
        UTF8 => "object",
        DECIMAL => "float64",
        DATE => "datetime64[ns]",
        7 => "timedelta64[ms]",
        8 => "timedelta64[us]",
        9 => "datetime64[ms]",
        10 => "datetime64[us]",
        11 => "uint8",
        12 => "uint16",
        13 => "uint32",
        14 => "uint64",
        15 => "int8",
        16 => "int16",
        17 => "int32",
        18 => "int64",
        _ => "object",
    }
    .into()
}

/// A TimestampType's unit: its numpy name and ticks per second.
fn unit(ts: &T) -> (&'static str, i64) {
    match ts.get(2) {
        Some(u) if u.get(1).is_some() => ("ms", 1_000),
        Some(u) if u.get(2).is_some() => ("us", 1_000_000),
        _ => ("ns", 1_000_000_000),
    }
}

/// fastparquet reads a pandas categorical as `category` when fastparquet
/// wrote it, or when every data page of it is dictionary-encoded.
fn categorical(l: &Leaf, row_groups: &[T], created_by: &str) -> bool {
    if created_by.contains("fastparquet") {
        return true;
    }
    let name = l.element.text(4).unwrap_or_default();
    !row_groups.iter().any(|rg| {
        rg.list(1).iter().filter_map(|c| c.get(3)).any(|m| {
            let path: Vec<String> = m
                .list(3)
                .iter()
                .filter_map(|p| match p {
                    T::Bin(b) => Some(String::from_utf8_lossy(b).into_owned()),
                    _ => None,
                })
                .collect();
            path.join(".") == name
                && m.list(13)
                    .iter()
                    .any(|s| matches!(s.int(1), Some(0 | 3)) && !matches!(s.int(2), Some(2 | 8)))
        })
    })
}

mod stats;
use stats::statistics;

#[cfg(test)]
mod tests;
