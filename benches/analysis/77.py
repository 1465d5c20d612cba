import json
import pandas as pd

df = pd.read_csv("/data/microsoft.csv")
df["Date"] = pd.to_datetime(df["Date"], format="%d-%b-%y")
monthly = df.groupby([df["Date"].dt.year.rename("year"), df["Date"].dt.month.rename("month")])["Close"].mean()
best = monthly[monthly == monthly.max()].sort_index().index[-1]
year, month = best
print(json.dumps({"Highest_Monthly_Average_Close_Price": f"{month}, {year}, {monthly[best]:.2f}"}))
