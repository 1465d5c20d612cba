import json
import pandas as pd

df = pd.read_csv("/data/GODREJIND.csv")
print(json.dumps({"mean_close_price": round(df["Close Price"].mean(), 2)}))
