import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/election2016.csv")
stat, p = stats.shapiro(df["per_dem"])
print(json.dumps({"normality_status": "normal" if p >= 0.05 else "not normal"}))
