import json
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

df = pd.read_csv("/data/sales.csv", parse_dates=["date"])
monthly = df.set_index("date").resample("MS")["amount"].sum()
style = {"color": "tab:blue", "linewidth": 2, "marker": "o"}
fig, ax = plt.subplots(figsize=(8, 4))
ax.plot(monthly.index, monthly.values, **style)
ax.set_title("Monthly sales")
ax.set_ylabel("amount")
ax.grid(True, alpha=0.3)
fig.autofmt_xdate()
fig.tight_layout()
fig.savefig("/out/monthly.png", dpi=120)
print(json.dumps({"months": int(len(monthly)), "total": float(np.round(monthly.sum(), 2))}))
