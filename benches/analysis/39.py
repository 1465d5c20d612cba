import json
import numpy as np
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/imp.score.ldlr.metabolome.csv")
s = df["importance.score"].dropna()
stat, p = stats.shapiro(s)
if p < 0.05:
    s = np.log(s[s > 0])
print(json.dumps({
    "is_normal": round(p, 4),
    "transformed_importance_score_mean": round(s.mean(), 2),
    "transformed_importance_score_std": round(s.std(), 2),
}))
