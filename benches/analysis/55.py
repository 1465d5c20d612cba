import json
import pandas as pd

df = pd.read_csv("/data/estimated_numbers.csv")
cases = df["No. of cases"].str.split("[", regex=False).str[0].str.strip()
cases = pd.to_numeric(cases, errors="coerce").dropna().astype("Int64")
print(json.dumps({"mean_cases": int(round(cases.mean()))}))
