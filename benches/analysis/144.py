import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/election2016.csv")
out = {}
for party, col in (("dem", "per_dem"), ("gop", "per_gop")):
    x = df[col]
    res = stats.anderson(x, dist="norm")
    crit_5 = res.critical_values[list(res.significance_level).index(5.0)]
    out[f"mean_{party}"] = round(x.mean(), 2)
    out[f"std_dev_{party}"] = round(x.std(), 3)
    out[f"dist_{party}"] = "Not Normal" if res.statistic > crit_5 else "Normal"
print(json.dumps(out))
