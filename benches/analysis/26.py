import json
import pandas as pd

df = pd.read_csv("/data/insurance.csv").dropna(subset=["charges", "children"])
r = df["charges"].corr(df["children"])
print(json.dumps({"correlation_coefficient": round(r, 2)}))
