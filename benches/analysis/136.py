import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/titanic.csv")
out = {}
for cls in (1, 2, 3):
    stat, p = stats.shapiro(df.loc[df["Pclass"] == cls, "Fare"])
    out[f"p_value_class_{cls}"] = round(p, 4)
print(json.dumps(out))
