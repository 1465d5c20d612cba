# Excel (.xlsx) through pandas and openpyxl: write several sheets, read one
# sheet, a range and every sheet, and openpyxl directly (formulas, read-only mode).
import json
import numpy as np
import openpyxl
import pandas as pd

rng = np.random.default_rng(5)
sales = pd.DataFrame({"month": pd.date_range("2024-01-01", periods=24, freq="MS"),
                      "region": rng.choice(["north", "south"], 24), "revenue": rng.random(24) * 1e4})
with pd.ExcelWriter("/tmp/report.xlsx", engine="openpyxl") as xw:
    sales.to_excel(xw, sheet_name="sales", index=False)
    sales.groupby("region").revenue.sum().to_excel(xw, sheet_name="totals")
one = pd.read_excel("/tmp/report.xlsx", sheet_name="sales", parse_dates=["month"])
part = pd.read_excel("/tmp/report.xlsx", sheet_name=0, usecols="A:B", nrows=5)
every = pd.read_excel("/tmp/report.xlsx", sheet_name=None)
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "calc"
ws.append(["a", "b", "sum"])
for i in range(1, 51):
    ws.append([i, i * 2, f"=A{i + 1}+B{i + 1}"])
wb.save("/out/calc.xlsx")
ro = openpyxl.load_workbook("/out/calc.xlsx", read_only=True, data_only=False)
cells = [row for row in ro["calc"].iter_rows(min_row=2, max_row=3, values_only=True)]
ro.close()
try:
    pd.read_excel("/tmp/missing.xlsx")
except FileNotFoundError as e:
    print("missing", e.errno)
print(json.dumps({"rows": len(one), "part": part.shape[0], "sheets": sorted(every),
                  "cells": [list(map(str, c)) for c in cells]}))
