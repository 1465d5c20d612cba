import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/election2016.csv")
r, p = stats.pearsonr(df["votes_dem"], df["votes_gop"])
if p >= 0.05:
    kind = "none"
else:
    kind = "linear" if abs(r) >= 0.5 else "nonlinear"
print(json.dumps({"correlation_coefficient": round(r, 3), "p_value": round(p, 4), "relationship_type": kind}))
