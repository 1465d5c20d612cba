import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/election2016.csv")
diff = pd.to_numeric(df["diff"].str.replace(",", ""))
points = pd.to_numeric(df["per_point_diff"].str.rstrip("%"))
r, p = stats.pearsonr(diff, points)
if p >= 0.05:
    kind = "none"
else:
    kind = "linear" if abs(r) >= 0.5 else "nonlinear"
print(json.dumps({"correlation_coefficient": round(r, 2), "p_value": round(p, 4), "relationship_type": kind}))
