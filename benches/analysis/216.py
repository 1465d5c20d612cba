import json
import pandas as pd

df = pd.read_csv("/data/ferret-Pitt-2-preinf-lib2-100_sitediffsel.csv")
print(json.dumps({"mean": round(df["abs_diffsel"].mean(), 2), "std_dev": round(df["abs_diffsel"].std(), 2)}))
