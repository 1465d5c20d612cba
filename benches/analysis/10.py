import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/GODREJIND.csv")
stat, p = stats.shapiro(df["Total Traded Quantity"])
print(json.dumps({"is_normal": "yes" if p > 0.05 else "no"}))
