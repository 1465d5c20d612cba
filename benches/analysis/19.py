import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/unemployement_industry.csv")
skew = round(stats.skew(df["Mar.2020"].dropna()), 2)
print(json.dumps({"is_normal": "Yes" if -0.5 <= skew <= 0.5 else "No"}))
