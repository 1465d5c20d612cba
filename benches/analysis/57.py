import json
import pandas as pd

df = pd.read_csv("/data/estimated_numbers.csv")
for col in ["No. of cases", "No. of deaths"]:
    df[col] = pd.to_numeric(df[col].str.split("[", regex=False).str[0].str.strip(),
                            errors="coerce").astype("Int64")
r = df["No. of cases"].astype(float).corr(df["No. of deaths"].astype(float))
print(json.dumps({"correlation_coefficient": round(r, 2)}))
