import json
import pandas as pd

df = pd.read_csv("/data/titanic.csv")
sel = df[(df["Survived"] == 1) & (df["Pclass"] == 1)]
print(json.dumps({"correlation_coefficient": round(sel["Age"].corr(sel["Fare"]), 3)}))
