import json
import pandas as pd

df = pd.read_csv("/data/insurance.csv")
q1, q3 = df["charges"].quantile([0.25, 0.75])
iqr = q3 - q1
out = df.loc[(df["charges"] < q1 - 1.5 * iqr) | (df["charges"] > q3 + 1.5 * iqr), "charges"]
print(json.dumps({
    "total_outliers": int(len(out)),
    "mean_charges_outliers": round(out.mean(), 2),
    "median_charges_outliers": round(out.median(), 2),
}))
