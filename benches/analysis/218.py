import json
import pandas as pd

df = pd.read_csv("/data/ferret-Pitt-2-preinf-lib2-100_sitediffsel.csv")
r = df["positive_diffsel"].corr(df["negative_diffsel"])
print(json.dumps({"correlation_coefficient": round(r, 2)}))
