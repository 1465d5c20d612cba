import json
import pandas as pd

df = pd.read_csv("/data/2015.csv")
corr = df.select_dtypes("number").corr()["Happiness Score"].drop("Happiness Score")
var = corr.abs().idxmax()
print(json.dumps({
    "strongest_correlation_variable": var,
    "correlation_type": "positive" if corr[var] > 0 else "negative",
}))
