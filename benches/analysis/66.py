import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/beauty and the labor market.csv")
r, p = stats.pearsonr(df["wage"], df["exper"])
if p >= 0.05:
    kind = "none"
else:
    kind = "linear" if abs(r) >= 0.5 else "nonlinear"
print(json.dumps({"correlation_coefficient": round(r, 2), "p_value": round(p, 4), "relationship_type": kind}))
