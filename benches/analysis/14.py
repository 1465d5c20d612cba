import json
import pandas as pd

df = pd.read_csv("/data/GODREJIND.csv")
df["Price Range"] = df["High Price"] - df["Low Price"]
pr = df["Price Range"]
print(json.dumps({
    "price_range_mean": round(pr.mean(), 2),
    "price_range_median": round(pr.median(), 2),
    "price_range_std_dev": round(pr.std(), 2),
}))
