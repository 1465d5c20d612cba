import json
import pandas as pd

df = pd.read_csv("/data/estimated_numbers.csv")
pct = df[["No. of cases_min", "No. of deaths_max"]].isna().mean() * 100
print(json.dumps({
    "percentage_cases_min": round(pct["No. of cases_min"], 2),
    "percentage_deaths_max": round(pct["No. of deaths_max"], 2),
}))
