import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/test_Y3wMUE5_7gLdaTN.csv")
grad = df.loc[df["Education"] == "Graduate", "LoanAmount"].dropna()
not_grad = df.loc[df["Education"] == "Not Graduate", "LoanAmount"].dropna()
t, p = stats.ttest_ind(grad, not_grad)
print(json.dumps({
    "graduate_mean_loan": round(grad.mean(), 2),
    "not_graduate_mean_loan": round(not_grad.mean(), 2),
    "significance": "significant" if p < 0.05 else "no significant",
}))
