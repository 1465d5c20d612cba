import json
import pandas as pd

df = pd.read_csv("/data/ferret-Pitt-2-preinf-lib2-100_sitediffsel.csv")
q1, q3 = df["abs_diffsel"].quantile([0.25, 0.75])
iqr = q3 - q1
out = df[(df["abs_diffsel"] < q1 - 1.5 * iqr) | (df["abs_diffsel"] > q3 + 1.5 * iqr)]
print(json.dumps({
    "site_identifiers": ",".join(out["site"].astype(str)),
    "outlier_values": ",".join(str(round(v, 2)) for v in out["abs_diffsel"]),
}))
