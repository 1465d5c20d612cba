import json
import pandas as pd

df = pd.read_csv("/data/microsoft.csv")
print(json.dumps({"correlation_coefficient": round(df["High"].corr(df["Low"]), 2)}))
