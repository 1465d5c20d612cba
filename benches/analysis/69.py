import json
import pandas as pd

df = pd.read_csv("/data/beauty and the labor market.csv")
df["experience_score"] = df["exper"] * df["looks"]
print(json.dumps({"correlation": round(df["experience_score"].corr(df["wage"]), 3)}))
