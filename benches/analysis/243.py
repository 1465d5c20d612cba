import json
import pandas as pd

df = pd.read_csv("/data/baseball_data.csv")
print(json.dumps({"mean_batting_average": round(df["batting_average"].dropna().mean(), 3)}))
