//! The footer facts against what pandas (fastparquet, as in the sandbox
//! image) reported for the same files: `scripts/parquet-fixtures.py` wrote
//! the files under `tests/fixtures/parquet/` with pyarrow and fastparquet,
//! and `expected.json` with pandas' dtypes, missing counts and ranges.

use super::*;
use crate::policy::DataLevel;
use crate::prompt::preview::preview_input_at;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/parquet");

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{DIR}/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn footer_facts_are_what_pandas_reports() {
    let expected: Value = serde_json::from_slice(&fixture("expected.json")).expect("expected.json");
    let (mut columns, mut ranges, mut lower_bounds) = (0, 0, 0);
    for (file, want) in expected.as_object().unwrap() {
        let bytes = fixture(file);
        let t = table(&footer(&bytes).unwrap()).unwrap();
        assert_eq!(t.rows, want["rows"].as_u64().unwrap(), "{file}");
        assert_eq!(
            t.index,
            want["index"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_str().unwrap())
                .collect::<Vec<_>>(),
            "{file}"
        );
        let cols = want["columns"].as_array().unwrap();
        assert_eq!(t.columns.len(), cols.len(), "{file}: {:?}", t.columns);
        for (ours, theirs) in t.columns.iter().zip(cols) {
            let what = format!("{file} {ours:?} vs pandas {theirs}");
            assert_eq!(ours.name, theirs["name"].as_str().unwrap(), "{what}");
            assert_eq!(ours.dtype, theirs["dtype"].as_str().unwrap(), "{what}");
            let missing = theirs["missing"].as_u64().unwrap();
            match ours.missing {
                Missing::Exactly(n) => assert_eq!(n, missing, "{what}"),
                Missing::AtLeast(n) => {
                    assert!(n <= missing, "{what}");
                    lower_bounds += 1;
                }
                Missing::Unknown => panic!("{what}: these writers all state null counts"),
            }
            if let Some((lo, hi)) = &ours.range {
                assert_eq!(
                    (lo.as_str(), hi.as_str()),
                    (
                        theirs["min"].as_str().unwrap(),
                        theirs["max"].as_str().unwrap()
                    ),
                    "{what}"
                );
                ranges += 1;
            }
            columns += 1;
        }
    }
    assert_eq!(columns, 8 + 10 + 10 + 11, "every column of the four files");
    // Every column with a min and max in pandas but a category, a date kept
    // as objects and those fastparquet wrote without statistics (text,
    // booleans).
    assert!(ranges >= 27, "only {ranges} ranges stated");
    assert_eq!(lower_bounds, 1, "the NaN value written by pyarrow alone");
}

#[test]
fn the_preview_states_the_shape_the_call_and_the_facts_within_its_budget() {
    let bytes = fixture("pandas_index.parquet");
    let p = preview_input_at("m.parquet", &bytes, bytes.len() as u64, DataLevel::Preview);
    for part in [
        "Parquet: 40 row(s) × 10 column(s) in 1 row group(s), written by \"parquet-cpp-arrow",
        "Read it with `pd.read_parquet(\"/data/m.parquet\")` (fastparquet); pandas makes [\"id\"] the DataFrame's index",
        "\n\"age\": float64; 8 missing (20.0%); 20.5 to 39.5",
        "\n\"n_gap\": Int64; 6 missing (15.0%); -10 to 107",
        "\n\"kind\": category; 1 missing (2.5%)\n",
        "\n\"utc\": datetime64[ns, UTC]; 2024-03-01 12:00:00+00:00 to 2024-03-09 12:00:00+00:00",
    ] {
        assert!(p.contains(part), "{part:?} missing:\n{p}");
    }
    assert!(p.len() <= crate::prompt::preview::PREVIEW_MAX_BYTES);
    let s = preview_input_at("m.parquet", &bytes, bytes.len() as u64, DataLevel::Schema);
    assert!(s.contains("\n\"age\": float64; 8 missing (20.0%)\n"), "{s}");
    assert!(!s.contains("39.5") && !s.contains("2024"), "{s}");
    let plain = fixture("arrow_plain.parquet");
    let p = preview_input_at("p.parquet", &plain, plain.len() as u64, DataLevel::Preview);
    assert!(
        p.contains("\"nan_value\": float64; 1 missing (25.0%) or more: NaN values"),
        "{p}"
    );
    assert!(
        p.contains("\"text\": object; 1 missing (25.0%); \"beta\" to \"älpha\""),
        "{p}"
    );
}

#[test]
fn a_damaged_or_cut_footer_is_said_not_guessed() {
    let bytes = fixture("arrow_plain.parquet");
    let n = bytes.len();
    // The head of a file whose footer is past it.
    let head = preview_input_at("x.parquet", &bytes[..n / 2], n as u64, DataLevel::Preview);
    assert!(head.contains("binary: Parquet file"), "{head}");
    let mut broken = bytes.clone();
    let len = u32::from_le_bytes(broken[n - 8..n - 4].try_into().unwrap()) as usize;
    broken[n - 8 - len..n - 8].fill(0xff);
    let p = preview_input_at("x.parquet", &broken, n as u64, DataLevel::Preview);
    assert!(p.contains("whose footer this preview cannot read"), "{p}");
    let mut long = bytes.clone();
    long[n - 8..n - 4].copy_from_slice(&(n as u32 * 2).to_le_bytes());
    assert!(
        footer(&long)
            .unwrap_err()
            .contains("longer than the part read")
    );
    assert_eq!(footer_len(&bytes[n - 8..]), Some(len));
}

/// A big Parquet file is previewed from its footer, read from its end.
#[test]
fn a_parquet_file_past_the_preview_read_is_previewed_from_its_footer() {
    let bytes = fixture("pandas_pyarrow.parquet");
    let n = bytes.len();
    let len = footer_len(&bytes[n - 8..]).unwrap();
    // Bytes between the last page and the footer: the pages' offsets hold.
    let mut big = bytes[..n - 8 - len].to_vec();
    big.resize(big.len() + crate::prompt::preview::PREVIEW_READ, 0);
    big.extend_from_slice(&bytes[n - 8 - len..]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.parquet");
    std::fs::write(&path, &big).unwrap();
    let file = crate::sandbox::InputFile::hash_file("big.parquet".into(), &path).unwrap();
    assert_eq!(file.tail(8), bytes[n - 8..]);
    assert!(file.head(crate::prompt::preview::PREVIEW_READ).len() < big.len());
    let p = crate::prompt::preview::preview_file(&file, DataLevel::Preview);
    assert!(p.contains("(32.0 MiB, "), "{p}");
    assert!(
        p.contains("40 row(s) × 11 column(s) in 3 row group(s)"),
        "{p}"
    );
    assert!(
        p.contains("\n\"age\": float64; 8 missing (20.0%); 20.5 to 39.5"),
        "{p}"
    );
}
