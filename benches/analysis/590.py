import json
import pandas as pd
from sklearn.linear_model import LinearRegression

df = pd.read_csv("/data/20170413_000000_group_statistics.csv")
df.columns = df.columns.str.strip()
df["timestamp"] = pd.to_datetime(df["timestamp"], format="%b %d  %Y %I:%M:%S %p")
df["hour"] = df["timestamp"].dt.hour + df["timestamp"].dt.minute / 60
features = ["hour", "num. calls answered", "num. calls abandoned", "num. calls transferred",
            "num. calls timed out", "avg. num. agents talking"]
model = LinearRegression().fit(df[features], df["avg. num. agents staffed"])
target = df[df["timestamp"] == pd.Timestamp("2017-04-13 12:00:00")]
pred = model.predict(target[features])[0]
print(json.dumps({"predicted_agents": max(0, int(round(pred)))}))
