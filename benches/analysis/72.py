import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/microsoft.csv")
stat, p = stats.shapiro(df["Close"])
print(json.dumps({"normality_test_result": "Normal" if p >= 0.05 else "Non-normal"}))
