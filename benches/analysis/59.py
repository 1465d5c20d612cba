import json
import pandas as pd

df = pd.read_csv("/data/estimated_numbers.csv")
am = df[df["WHO Region"] == "Americas"].dropna(subset=["No. of cases_median"])
means = am.groupby("Country")["No. of cases_median"].mean()
print(json.dumps({"country_name": means.idxmax()}))
