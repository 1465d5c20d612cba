import json
import pandas as pd

df = pd.read_csv("/data/test_ave.csv")
print(json.dumps({"mean_fare": round(df["Fare"].mean(), 2)}))
