import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/imp.score.ldlr.metabolome.csv")
x = df["row m/z"].dropna()
stat, p = stats.kstest(x, "norm", args=(x.mean(), x.std()))
print(json.dumps({
    "ks_test_p_value": round(p, 4),
    "normality_decision": "normally distributed" if p >= 0.05 else "not normally distributed",
}))
