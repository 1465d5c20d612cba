import json
import duckdb
import pandas as pd

con = duckdb.connect()
top = con.execute("SELECT product, SUM(qty) AS qty FROM read_parquet('/data/lines.parquet') GROUP BY product ORDER BY qty DESC LIMIT 5").df()
excel = pd.read_excel("/data/targets.xlsx", sheet_name="2026")
merged = top.merge(excel, on="product", how="left")
print(json.dumps({"top": merged["product"].tolist(), "missing_targets": int(merged["target"].isna().sum())}))
