# expect: allow
import pandas as pd
df = pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]})
df["c"] = df.a * df.b
df.to_csv("/out/table.csv", index=False)
print(df.describe())
