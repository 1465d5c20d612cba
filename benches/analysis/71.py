import json
import pandas as pd

df = pd.read_csv("/data/microsoft.csv")
print(json.dumps({"mean_volume": round(df["Volume"].mean(), 2), "std_dev_volume": round(df["Volume"].std(), 2)}))
