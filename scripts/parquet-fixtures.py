#!/usr/bin/env python3
"""Writes the Parquet files under tests/fixtures/parquet/ and, beside them,
expected.json: what pandas.read_parquet (fastparquet engine, as in the
sandbox image) reports for each column — dtype, missing count, min and
max as str() writes them. The preview's unit tests
(src/prompt/preview/parquet/tests.rs) compare the footer facts with it.

Needs pandas 2.3, pyarrow and fastparquet (pip install pandas==2.3.3
pyarrow fastparquet==2026.9.0); run from the repository root."""
import datetime as dt
import decimal
import json
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

out = "tests/fixtures/parquet"
os.makedirs(out, exist_ok=True)

n = 40
frame = pd.DataFrame({
    "id": np.arange(1, n + 1),
    "age": [np.nan if i % 5 == 0 else 20 + i / 2 for i in range(n)],
    "n_gap": pd.array([None if i % 7 == 3 else i * 3 - 10 for i in range(n)], dtype="Int64"),
    "name": [None if i % 9 == 0 else f"n{i % 11}" for i in range(n)],
    "flag": [i % 3 == 0 for i in range(n)],
    "flag_gap": pd.array([None if i == 4 else i % 2 == 0 for i in range(n)], dtype="boolean"),
    "when": pd.to_datetime([None if i == 7 else f"2024-01-{1 + i % 28:02d} {i % 24:02d}:30:00" for i in range(n)]),
    "day": [None if i == 2 else dt.date(2023, 1 + i % 12, 1 + i % 27) for i in range(n)],
    "kind": pd.Categorical([None if i == 1 else "abc"[i % 3] for i in range(n)]),
    "ratio32": np.array([np.nan if i == 0 else i / 8 for i in range(n)], dtype="float32"),
    "utc": pd.to_datetime([f"2024-03-{1 + i % 9:02d} 12:00:00" for i in range(n)]).tz_localize("UTC"),
})
frame.to_parquet(f"{out}/pandas_pyarrow.parquet", engine="pyarrow", row_group_size=15)
frame.set_index("id").to_parquet(f"{out}/pandas_index.parquet", engine="pyarrow")
frame.drop(columns=["day"]).to_parquet(f"{out}/pandas_fastparquet.parquet", engine="fastparquet", row_group_offsets=25)
table = pa.table({
    "i32_gap": pa.array([1, None, -3, 7], pa.int32()),
    "u8": pa.array([200, 3, 255, 0], pa.uint8()),
    "text": pa.array(["zeta", "älpha", None, "beta"]),
    "ms": pa.array([1, 2_000, None, 86_400_000], pa.timestamp("ms")),
    "nan_value": pa.array([1.5, float("nan"), None, -0.25], pa.float64()),
    "price": pa.array([decimal.Decimal("12.50"), None, decimal.Decimal("-3.05"), decimal.Decimal("0.10")], pa.decimal128(7, 2)),
    "date": pa.array([dt.date(2024, 2, 29), None, dt.date(1999, 12, 31), dt.date(2024, 1, 1)], pa.date32()),
    "all_null": pa.array([None, None, None, None], pa.int64()),
})
pq.write_table(table, f"{out}/arrow_plain.parquet")

expected = {}
for name in sorted(os.listdir(out)):
    if not name.endswith(".parquet"):
        continue
    df = pd.read_parquet(f"{out}/{name}", engine="fastparquet")
    cols = []
    for c in df.columns:
        s = df[c]
        v = s.dropna()
        col = {"name": str(c), "dtype": str(s.dtype), "missing": int(s.isna().sum())}
        if len(v) and s.dtype != object and str(s.dtype) != "category":
            col["min"], col["max"] = str(v.min()), str(v.max())
        elif len(v) and all(isinstance(x, str) for x in v):
            col["min"], col["max"] = json.dumps(min(v), ensure_ascii=False), json.dumps(max(v), ensure_ascii=False)
        cols.append(col)
    expected[name] = {"rows": len(df), "index": [str(i) for i in df.index.names if i is not None], "columns": cols}
with open(f"{out}/expected.json", "w") as f:
    json.dump(expected, f, indent=1, ensure_ascii=False)
    f.write("\n")
