import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/titanic.csv")
first = df.loc[df["Pclass"] == 1, "Age"].dropna()
third = df.loc[df["Pclass"] == 3, "Age"].dropna()
u, p = stats.mannwhitneyu(first, third, alternative="two-sided")
print(json.dumps({"p_value": round(p, 4), "significance": "Yes" if p < 0.05 else "No"}))
