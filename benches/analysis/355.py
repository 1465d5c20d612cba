import json
import pandas as pd
import statsmodels.api as sm

df = pd.read_csv("/data/test_x.csv")
X = sm.add_constant(df[["Age", "Pclass"]])
model = sm.OLS(df["Fare"], X).fit()
out = {}
for var in ("Age", "Pclass"):
    out[f"coef_{var.lower()}"] = round(model.params[var], 2)
    out[f"relationship_{var.lower()}"] = "significant" if model.pvalues[var] < 0.05 else "not significant"
print(json.dumps(out))
