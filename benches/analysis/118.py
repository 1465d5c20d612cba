import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/2015.csv")
res = stats.linregress(df["Economy (GDP per Capita)"], df["Health (Life Expectancy)"])
r2 = res.rvalue ** 2
print(json.dumps({"coefficient_determination": round(r2, 2), "model_fit": "good fit" if r2 >= 0.7 else "poor fit"}))
