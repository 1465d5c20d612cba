# expect: allow
import pandas as pd
df = pd.read_csv("/data/visits.csv", parse_dates=["date"])
df["month"] = df["date"].dt.to_period("M")
table = df.pivot_table(index="month", columns="channel", values="visits", aggfunc="sum", fill_value=0)
print(table.pct_change().round(3))
