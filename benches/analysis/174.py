import json
import pandas as pd

df = pd.read_csv("/data/titanic.csv")
print(json.dumps({"fare_skewness": round(df["Fare"].skew(), 2)}))
