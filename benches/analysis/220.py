import json
import pandas as pd

df = pd.read_csv("/data/ferret-Pitt-2-preinf-lib2-100_sitediffsel.csv")
df = df.drop_duplicates()
missing = int(df.isna().sum().sum())
if missing:
    num = df.select_dtypes("number").columns
    df[num] = df[num].fillna(df[num].mean())
    handling = "Missing numeric values were filled with the column mean."
else:
    handling = "No missing values were found."
df["diff_range"] = df["max_diffsel"] - df["min_diffsel"]
df.to_csv("/out/cleaned_dataset.csv", index=False)
print(json.dumps({"cleaned_dataset": "cleaned_dataset.csv", "missing_values_handling": handling}))
