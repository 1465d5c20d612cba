# The picture's program (scripts/readme-picture runs it on examples/sales.csv),
# in two cells that run as two steps of one session: a look at the channels,
# then conversion per channel (paid / leads), the best channel and the overall
# rate, from the state the look left.
# %% look at the channels
import json

import pandas as pd

sales = pd.read_csv("/data/sales.csv")
print(sales["channel"].value_counts().to_string())
sales[["leads", "paid"]].describe().loc[["min", "max"]]

# %% conversion per channel
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
