#!/usr/bin/env python3
"""Writes tests/fixtures/xlsx/facts.xlsx with openpyxl and, beside it,
expected.json: what pandas.read_excel reports for each column of each
sheet — dtype, missing count, distinct count, min and max as str() writes
them. The preview's unit tests (src/prompt/preview/xlsx/tests.rs) compare
the sheet facts with it. Then first_look.xlsx, a messy export (spellings of
one region, a junk value, a -999 sentinel, a TOTAL line last) and
first_look.json: pandas' value counts of each text column with at most 20
distinct values, each number column's zeros, negatives and most repeated
value other than zero, and the last 2 rows as str() writes them.

Needs pandas 2.3 and openpyxl 3.1 (as in the sandbox image); run from the
repository root."""
import datetime as dt
import json
import os

import openpyxl
import pandas as pd

out = "tests/fixtures/xlsx"
os.makedirs(out, exist_ok=True)
cols = {
    "ints": [1, 2, 3, 4, 5, 6],
    "int_gap": [1, None, 3, 4, -5, 6],
    "int_float": [1, 2.5, 3, 4, 5, 6e-7],
    "int_numeric_text": [1, "12", 3, 4, " 7", 6],
    "int_text": [1, "x", 3, 4, 5, 6],
    "bools": [True, False, True, True, False, True],
    "bool_gap": [True, None, False, True, True, True],
    "bool_int": [True, 1, 0, False, 1, 1],
    "bool_text": [True, "True", "false", False, True, True],
    "dates": [dt.datetime(2024, 1, 2, 3, 4, 5), dt.date(2024, 1, 3), dt.datetime(2023, 5, 1), dt.datetime(2025, 1, 1), dt.datetime(2024, 6, 1), dt.datetime(2024, 6, 2)],
    "date_gap": [dt.datetime(2024, 1, 2), None, dt.datetime(2023, 5, 1), dt.datetime(2025, 1, 1), None, dt.datetime(2024, 2, 29)],
    "date_text": [dt.datetime(2024, 1, 2), "x", dt.datetime(2023, 5, 1), dt.datetime(2025, 1, 1), "y", "x"],
    "na_text": ["NA", "a", "", "b", "n/a", "a"],
    "text": ["a", "b", "a", None, "c", "a"],
    "nums_na": [1.5, "NA", "n/a", 2, 3, "null"],
    "float_text": ["12.0", 1, 2, 3, 4, 5],
    "all_none": [None, None, None, None, None, None],
}
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "facts"
ws.append(list(cols))
for i in range(6):
    ws.append([v[i] for v in cols.values()])
ws.append([])
ws.append([7] + [None] * (len(cols) - 2) + [None])
ws2 = wb.create_sheet("second")
ws2.append(["city", "n"])
for i in range(30):
    ws2.append(["Paris" if i % 3 else "Lyon", i * 1.5 if i % 4 else None])
wb.save(f"{out}/facts.xlsx")

expected = {}
for sheet, df in pd.read_excel(f"{out}/facts.xlsx", sheet_name=None).items():
    res = []
    for c in df.columns:
        s = df[c]
        v = s.dropna()
        col = {"name": str(c), "dtype": str(s.dtype), "missing": int(s.isna().sum()), "nunique": int(s.nunique())}
        if len(v) and str(s.dtype) in ("int64", "float64") or str(s.dtype).startswith("datetime"):
            col["min"], col["max"] = str(v.min()), str(v.max())
        res.append(col)
    expected[sheet] = {"rows": len(df), "columns": res}
with open(f"{out}/expected.json", "w") as f:
    json.dump(expected, f, indent=1, ensure_ascii=False)
    f.write("\n")

regions = ["North", "north", "N.", "South", "south ", "S.", "East", "EAST", "West", "W."]
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "export"
ws.append(["region", "sex", "amount", "units"])
for i in range(30):
    ws.append([regions[i % len(regions)] if i % 7 else "North", "0" if i == 13 else "MF"[i % 2],
               -999 if i % 6 == 0 else (0 if i % 10 == 3 else 10.5 * i), i % 4 - 1])
ws.append(["TOTAL", None, 12345.5, 42])
wb.save(f"{out}/first_look.xlsx")
df = pd.read_excel(f"{out}/first_look.xlsx")
look = {"columns": {}, "last": [[("" if pd.isna(v) else str(v)) for v in r] for r in df.tail(2).itertuples(index=False)]}
for c in df.columns:
    s = df[c].dropna()
    if df[c].dtype == object:
        if s.nunique() <= 20:
            look["columns"][c] = {"values": {str(k): int(n) for k, n in s.value_counts().items()}}
    else:
        counts = s[s != 0].value_counts()
        look["columns"][c] = {"zeros": int((s == 0).sum()), "negatives": int((s < 0).sum()),
                              "most": [str(counts.index[0]), int(counts.iloc[0])]}
with open(f"{out}/first_look.json", "w") as f:
    json.dump(look, f, indent=1, ensure_ascii=False)
    f.write("\n")
