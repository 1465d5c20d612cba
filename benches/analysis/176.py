import json
import pandas as pd

df = pd.read_csv("/data/titanic.csv")
sel = df[(df["Sex"] == "male") & (df["Survived"] == 1) & (df["Fare"] > df["Fare"].mean())]
print(json.dumps({"median_age": round(sel["Age"].dropna().median(), 2)}))
