import json
import pandas as pd

df = pd.read_csv("/data/2015.csv")
s = df["Happiness Score"]
z = (s - s.mean()) / s.std(ddof=0)
print(json.dumps({"outlier_countries": df.loc[z.abs() > 3, "Country"].tolist()}))
