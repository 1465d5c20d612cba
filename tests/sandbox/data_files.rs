//! The files data people keep, read in the real sandbox image under the
//! default hardened container (runc, seccomp allowlist, read-only root, uid
//! 10001, no network, the default limits but a longer deadline): DuckDB aggregates CSV and Parquet
//! inputs, pandas reads Parquet (fastparquet) and Excel (openpyxl), and the
//! default policy lets such code through.
//!
//! The Parquet and Excel inputs are not committed: a first run writes them to
//! /out from a CSV made here, and the later runs get them back as inputs.
//! `COMPUTE_BOT_SANDBOX_IMAGE` names another image to try (a candidate build);
//! the default is the bot's default image.

use compute_bot::sandbox::{InputFile, Limits, Outcome};
use serde_json::Value;

/// 2,000 sales rows over 4 regions: `amount` is `i % 97`, region `i % 4`.
fn sales_csv() -> String {
    let mut s = String::from("day,region,amount\n");
    for i in 0..2000u32 {
        let region = ["north", "south", "east", "west"][(i % 4) as usize];
        s.push_str(&format!("2024-01-{:02},{region},{}\n", 1 + i % 28, i % 97));
    }
    s
}

/// The expected total per region of [`sales_csv`].
fn totals() -> [(String, u64); 4] {
    let mut t = [0u64; 4];
    for i in 0..2000u64 {
        t[(i % 4) as usize] += i % 97;
    }
    let names = ["east", "north", "south", "west"];
    let idx = [2usize, 0, 1, 3];
    std::array::from_fn(|k| (names[k].to_string(), t[idx[k]]))
}

fn last_json(o: &Outcome) -> Value {
    let line = o.stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {}", o.stdout))
}

/// Writes sales.parquet (pandas + fastparquet) and sales.xlsx (pandas + openpyxl)
/// to /out from the CSV input, and hands them back as inputs with the CSV.
async fn inputs() -> Vec<InputFile> {
    let code = r#"import pandas as pd
df = pd.read_csv('/data/sales.csv')
df.to_parquet('/out/sales.parquet', index=False)
with pd.ExcelWriter('/out/sales.xlsx') as xw:
    df.to_excel(xw, sheet_name='sales', index=False)
    df.groupby('region', as_index=False).amount.sum().to_excel(xw, sheet_name='totals', index=False)
print('{}')
"#;
    let csv = InputFile::new("sales.csv", sales_csv().into_bytes());
    let out = crate::run_allowed(code, vec![csv.clone()], 1.0).await;
    let mut files = vec![csv];
    for name in ["sales.parquet", "sales.xlsx"] {
        let a = out
            .artifacts
            .iter()
            .find(|a| a.name == name)
            .unwrap_or_else(|| panic!("{name} was not written: {:?}", out.artifacts));
        files.push(InputFile::new(name, a.bytes.clone()));
    }
    assert!(files[1].head(4).starts_with(b"PAR1"), "not Parquet");
    assert!(
        files[2].head(4).starts_with(b"PK\x03\x04"),
        "not an xlsx (zip)"
    );
    files
}

fn totals_json() -> Value {
    totals()
        .iter()
        .map(|(r, t)| serde_json::json!([r, t]))
        .collect()
}

#[tokio::test]
async fn duckdb_aggregates_csv_and_parquet_inputs_and_pandas_reads_parquet_and_excel() {
    let files = inputs().await;

    // DuckDB as the system prompt tells the model to use it under the default
    // limits (256MiB memory, 64MiB /tmp, 1 CPU).
    let duck = r#"import json
import duckdb
con = duckdb.connect(config={"memory_limit": "32MiB", "threads": 1, "temp_directory": "/tmp/duckdb"})
con.execute("SET enable_progress_bar = false")
q = "SELECT region, sum(amount)::BIGINT FROM {} GROUP BY region ORDER BY region"
csv = con.sql(q.format("read_csv('/data/sales.csv')")).fetchall()
pq = con.sql(q.format("read_parquet('/data/sales.parquet')")).fetchall()
df = con.sql("SELECT count(*) AS n, max(amount) AS top FROM '/data/sales.parquet'").df()
settings = con.sql("SELECT current_setting('threads'), current_setting('temp_directory')").fetchall()[0]
print(json.dumps({"csv": csv, "parquet": pq, "n": int(df.n[0]), "top": int(df.top[0]),
                  "threads": settings[0], "temp": settings[1]}))
"#;
    let out = crate::run_allowed(duck, files.clone(), 1.0).await;
    let v = last_json(&out);
    assert_eq!(v["csv"], totals_json(), "{v}");
    assert_eq!(v["parquet"], totals_json(), "{v}");
    assert_eq!(v["n"], 2000);
    assert_eq!(v["top"], 96);
    assert_eq!(v["threads"], 1);
    assert_eq!(v["temp"], "/tmp/duckdb");

    // pandas: Parquet through fastparquet, Excel (every sheet) through openpyxl.
    let pandas = r#"import json
import pandas as pd
p = pd.read_parquet("/data/sales.parquet", columns=["region", "amount"])
sheets = pd.read_excel("/data/sales.xlsx", sheet_name=None)
t = sheets["totals"].sort_values("region")
x = sheets["sales"].groupby("region").amount.sum().sort_index()
print(json.dumps({
    "parquet": [[r, int(a)] for r, a in p.groupby("region").amount.sum().sort_index().items()],
    "excel": [[r, int(a)] for r, a in x.items()],
    "totals_sheet": [[r, int(a)] for r, a in zip(t.region, t.amount)],
    "sheets": sorted(sheets), "columns": list(sheets["sales"].columns),
}))
"#;
    let out = crate::run_allowed(pandas, files, 1.0).await;
    let v = last_json(&out);
    assert_eq!(v["parquet"], totals_json(), "{v}");
    assert_eq!(v["excel"], totals_json(), "{v}");
    assert_eq!(v["totals_sheet"], totals_json(), "{v}");
    assert_eq!(v["sheets"], serde_json::json!(["sales", "totals"]));
    assert_eq!(v["columns"], serde_json::json!(["day", "region", "amount"]));
}

/// DuckDB inside the sandbox's restrictions: a sort larger than its
/// memory_limit spills to /tmp and finishes; no extension can be installed
/// or remote file read (no network), and each fails with DuckDB's own error
/// rather than a crash; the defaults it picks follow the container (one
/// thread for one CPU, a memory limit below the container's).
#[tokio::test]
async fn duckdb_spills_under_tmp_and_fails_cleanly_without_network() {
    let code = r#"import json, os
import duckdb
con = duckdb.connect(config={"memory_limit": "16MiB", "threads": 1, "temp_directory": "/tmp/duckdb"})
con.execute("SET enable_progress_bar = false")
# 1.5 million rows of two BIGINTs (24 MB) do not fit in 16 MiB: blocks go to
# temp files (at most 90% of the 64 MiB /tmp).
con.execute("CREATE TEMP TABLE sorted AS SELECT x, hash(x) AS h FROM range(1500000) t(x) ORDER BY h")
n, s = con.sql("SELECT count(*), sum(x) FROM sorted").fetchall()[0]
temp = [p for (p, _) in con.sql("SELECT path, size FROM duckdb_temporary_files()").fetchall()]
errors = {}
for name, sql in [("install", "INSTALL httpfs"),
                  ("remote", "SELECT * FROM read_csv('https://example.com/x.csv')")]:
    try:
        con.execute(sql)
        errors[name] = None
    except duckdb.Error as e:
        errors[name] = type(e).__name__
default = duckdb.connect()
threads, mem = default.sql("SELECT current_setting('threads'), current_setting('memory_limit')").fetchall()[0]
print(json.dumps({"n": n, "sum": int(s), "errors": errors, "threads": threads, "mem": mem,
                  "temp": temp, "tmp": sorted(os.listdir("/tmp"))}))
"#;
    let out = crate::run_allowed(code, vec![], 1.0).await;
    let v = last_json(&out);
    assert_eq!(v["n"], 1_500_000, "{v}");
    assert_eq!(v["sum"], 1_124_999_250_000u64, "{v}");
    for which in ["install", "remote"] {
        let e = v["errors"][which].as_str();
        assert!(
            e.is_some_and(|e| e.ends_with("Exception") || e.ends_with("Error")),
            "{which} did not fail with a DuckDB error: {v}"
        );
    }
    let temp = v["temp"].as_array().unwrap();
    assert!(!temp.is_empty(), "nothing spilled: {v}");
    assert!(
        temp.iter()
            .all(|p| p.as_str().unwrap().starts_with("/tmp/duckdb/")),
        "{v}"
    );
    assert_eq!(v["threads"], 1, "{v}");
    let mem = v["mem"].as_str().unwrap();
    assert!(mem.ends_with("MiB"), "{mem}");
    let mib: f64 = mem.trim_end_matches(" MiB").parse().unwrap();
    let container = (Limits::default().memory.bytes() >> 20) as f64;
    assert!(
        mib < container,
        "DuckDB's default memory_limit {mem} is not below the container's {container} MiB"
    );
}
