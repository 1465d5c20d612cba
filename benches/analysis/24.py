import json
import pandas as pd

df = pd.read_csv("/data/insurance.csv")
ages = df["age"].dropna()
print(json.dumps({"mean_age": round(sum(ages) / len(ages), 2)}))
