import json
import pandas as pd

df = pd.read_csv("/data/test_Y3wMUE5_7gLdaTN.csv")
df["Self_Employed"] = df["Self_Employed"].fillna("No")
df["LoanAmount"] = df["LoanAmount"].fillna(df["LoanAmount"].median())
loan = df["LoanAmount"]
print(json.dumps({
    "mean_loan": round(loan.mean(), 2),
    "median_loan": round(loan.median(), 2),
    "std_dev_loan": round(loan.std(), 2),
}))
