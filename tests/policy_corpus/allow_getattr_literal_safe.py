# expect: allow
import pandas as pd
df = pd.DataFrame({"x": [1, 2, 3]})
for agg in ["mean", "sum"]:
    pass
print(getattr(df["x"], "mean")(), hasattr(df, "shape"))
