# expect: escalate dynamic-attribute
# policy: escalate
import pandas as pd
df = pd.DataFrame({"x": [1, 2]})
for agg in ["mean", "sum"]:
    print(getattr(df["x"], agg)())
