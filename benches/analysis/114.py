import json
import pandas as pd

df = pd.read_csv("/data/2015.csv")
top = df.loc[df["Happiness Score"] == df["Happiness Score"].max(), "Country"]
print(json.dumps({"country_with_highest_score": ", ".join(top)}))
