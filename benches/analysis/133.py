import json
import pandas as pd

df = pd.read_csv("/data/titanic.csv")
df = df.dropna(subset=["Cabin"])
median_age = df["Age"].median()
df["Age"] = df["Age"].fillna(median_age)
print(json.dumps({"row_count": len(df), "median_age": round(median_age, 1)}))
