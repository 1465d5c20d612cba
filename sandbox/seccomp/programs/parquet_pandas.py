# Parquet through pandas (fastparquet engine, cramjam codecs) and fastparquet
# itself: write with several codecs, read columns and row filters, row groups,
# and a file that is not Parquet.
import json
import fastparquet
import numpy as np
import pandas as pd

rng = np.random.default_rng(3)
n = 100_000
df = pd.DataFrame({"ts": pd.date_range("2024-01-01", periods=n, freq="min"),
                   "city": rng.choice(["Oslo", "Lima", "Pune"], n),
                   "temp": rng.normal(12, 8, n), "ok": rng.random(n) > 0.1})
df.to_parquet("/tmp/weather.parquet", index=False, compression="zstd")
df.to_parquet("/out/weather_snappy.parquet", index=False)
df.to_parquet("/tmp/weather_gzip.parquet", index=False, compression="gzip", row_group_offsets=25_000)
back = pd.read_parquet("/tmp/weather.parquet", columns=["city", "temp"],
                       filters=[("city", "==", "Oslo")])
pf = fastparquet.ParquetFile("/tmp/weather_gzip.parquet")
groups = sum(1 for _ in pf.iter_row_groups(columns=["temp"]))
snappy = pd.read_parquet("/out/weather_snappy.parquet")
df.head(1000).to_csv("/tmp/w.csv", index=False)
try:
    pd.read_parquet("/tmp/w.csv")
except Exception as e:  # not a Parquet file
    print(type(e).__name__, str(e)[:80])
print(json.dumps({"rows": len(back), "groups": groups, "cols": pf.columns,
                  "mean": float(snappy.temp.mean()), "fp": fastparquet.__version__}))
