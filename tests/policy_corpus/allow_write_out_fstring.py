# expect: allow
import pandas as pd
df = pd.read_csv("/data/a.csv")
for name, group in df.groupby("kind"):
    with open(f"/out/{name}.csv", "w") as fh:
        fh.write(group.to_csv(index=False))
