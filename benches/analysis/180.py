import json
import numpy as np
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/titanic.csv")
out = {}
for cls in (1, 2, 3):
    z = stats.zscore(df.loc[df["Pclass"] == cls, "Fare"])
    out[f"class{cls}_outliers"] = int((np.abs(z) > 3).sum())
print(json.dumps(out))
