import json
import pandas as pd

df = pd.read_csv("/data/beauty and the labor market.csv")
print(json.dumps({"mean_wage": round(df["wage"].mean(), 2), "std_wage": round(df["wage"].std(), 2)}))
