# expect: allow
import pandas as pd
df = pd.read_csv("/data/sales.csv")
summary = df.groupby(["region", "product"], as_index=False).agg(total=("amount", "sum"), n=("amount", "size"))
print(summary.sort_values("total", ascending=False).head(10).to_string())
