import json
import pandas as pd

df = pd.read_csv("/data/ferret-Pitt-2-preinf-lib2-100_sitediffsel.csv")
top = df.loc[df["positive_diffsel"] == df["positive_diffsel"].max(), "site"].astype(str)
print(json.dumps({"site_identifier": ",".join(top)}))
