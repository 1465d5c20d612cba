import csv, json, os
import numpy as np
import pandas as pd
rng = np.random.default_rng(1)
df = pd.DataFrame({"day": pd.date_range("2024-01-01", periods=500, freq="h").date,
                   "visits": rng.integers(1, 100, 500), "orders": rng.integers(0, 10, 500)})
df.to_csv("/tmp/sales.csv", index=False)
df = pd.read_csv("/tmp/sales.csv", parse_dates=["day"])
g = df.groupby("day").agg(visits=("visits", "sum"), orders=("orders", "sum"))
g["conversion"] = g.orders / g.visits
p = df.pivot_table(index=df.day.dt.dayofweek, values="orders", aggfunc="mean")
m = df.merge(g.reset_index(), on="day", how="left")
r = df.set_index("day").visits.rolling(3).mean()
g.to_json("/out/result.json")
with open("/out/result.json") as fh:
    json.load(fh)
print(json.dumps({"rows": len(m), "mean": float(r.mean()), "p": len(p)}))
print(os.listdir("/tmp"), os.getcwd(), os.cpu_count())
