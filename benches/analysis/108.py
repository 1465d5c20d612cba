import json
import pandas as pd

df = pd.read_csv("/data/test_Y3wMUE5_7gLdaTN.csv")
df["TotalIncome"] = df["ApplicantIncome"] + df["CoapplicantIncome"]
print(json.dumps({
    "mean_total_income": round(df["TotalIncome"].mean(), 2),
    "std_dev_total_income": round(df["TotalIncome"].std(), 2),
}))
