import json
import pandas as pd

df = pd.read_csv("/data/microsoft.csv")
df["Date"] = pd.to_datetime(df["Date"], format="%d-%b-%y")
df = df.sort_values("Date")
df["Daily Return"] = df["Close"].pct_change() * 100
print(json.dumps({
    "daily_return_mean": round(df["Daily Return"].mean(), 2),
    "daily_return_std": round(df["Daily Return"].std(), 2),
}))
