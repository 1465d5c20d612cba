import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/baseball_data.csv").dropna(subset=["number_of_doubles", "salary_in_thousands_of_dollars"])
r, p = stats.pearsonr(df["number_of_doubles"], df["salary_in_thousands_of_dollars"])
print(json.dumps({
    "correlation_coefficient": round(r, 2),
    "p_value": round(p, 4),
    "significance": "significant" if p < 0.05 else "no significant correlation",
}))
