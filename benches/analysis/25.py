import json
import pandas as pd

df = pd.read_csv("/data/insurance.csv")
skew = df["bmi"].skew()
print(json.dumps({"bmi_distribution": "normal" if abs(skew) < 0.5 else "not_normal"}))
