import json
import pandas as pd

df = pd.read_csv("/data/test_Y3wMUE5_7gLdaTN.csv").dropna(subset=["ApplicantIncome", "LoanAmount"])
r = df["ApplicantIncome"].corr(df["LoanAmount"])
print(json.dumps({"correlation_coefficient": round(r, 2)}))
