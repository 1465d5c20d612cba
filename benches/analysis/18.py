import json
import pandas as pd

df = pd.read_csv("/data/unemployement_industry.csv")
x = df["Mar.2019"].dropna()
q1, q3 = x.quantile([0.25, 0.75])
iqr = q3 - q1
x = x[(x >= q1 - 1.5 * iqr) & (x <= q3 + 1.5 * iqr)]
print(json.dumps({"mean_mar_2019": round(x.mean(), 2), "sd_mar_2019": round(x.std(), 2)}))
