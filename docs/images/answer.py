# The picture's program (scripts/readme-picture runs it on examples/sales.csv):
# conversion per channel (paid / leads), the best channel, and the overall rate.
import json

import pandas as pd

sales = pd.read_csv("/data/sales.csv")
by = sales.groupby("channel")[["leads", "paid"]].sum()
by["conversion"] = by["paid"] / by["leads"]
best = by["conversion"].idxmax()

print(json.dumps({
    "best_channel": best,
    "overall_conversion": float(sales["paid"].sum() / sales["leads"].sum()),
    "days": int(sales["day"].nunique()),
    "by_channel": {
        ch: {"leads": int(r.leads), "paid": int(r.paid), "conversion": float(r.conversion)}
        for ch, r in by.sort_values("conversion", ascending=False).iterrows()
    },
}))
