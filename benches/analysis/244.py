import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/baseball_data.csv")
stat, p = stats.shapiro(df["number_of_home_runs"].dropna())
print(json.dumps({"p_value": round(p, 4), "normality_test": "normal" if p >= 0.05 else "not_normal"}))
