import json
import pandas as pd

df = pd.read_csv("/data/test_ave.csv")
out = {}
for cls in (1, 2, 3):
    fare = df.loc[df["Pclass"] == cls, "Fare"]
    out[f"mean_fare_class{cls}"] = round(fare.mean(), 2)
    out[f"median_fare_class{cls}"] = round(fare.median(), 2)
    out[f"std_dev_fare_class{cls}"] = round(fare.std(ddof=0), 2)
print(json.dumps(out))
