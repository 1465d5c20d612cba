import json
import pandas as pd

df = pd.read_csv("/data/insurance.csv").dropna(subset=["age", "sex", "region"])
df["sex"] = (df["sex"] == "male").astype(int)
df["smoker"] = (df["smoker"] == "yes").astype(int)
df["region"] = df["region"].astype("category").cat.codes
for col in ["age", "bmi", "children", "charges"]:
    df[col] = (df[col] - df[col].min()) / (df[col].max() - df[col].min())
print(json.dumps({f"mean_{c}": round(float(df[c].mean()), 4)
                  for c in ["age", "sex", "bmi", "children", "smoker", "region", "charges"]}))
