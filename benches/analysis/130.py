import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/titanic.csv")
stat, p = stats.shapiro(df["Age"].dropna())
print(json.dumps({"norm_test_pvalue": round(p, 4), "is_normal": bool(p > 0.05)}))
