import json
import pandas as pd
import statsmodels.api as sm
from statsmodels.stats.outliers_influence import variance_inflation_factor
from statsmodels.stats.multicomp import pairwise_tukeyhsd
from statsmodels.stats.proportion import proportions_ztest
from statsmodels.stats.diagnostic import het_breuschpagan

df = pd.read_csv("/data/experiment.csv")
X = sm.add_constant(df[["dose", "age", "weight"]])
vif = {c: float(variance_inflation_factor(X.values, i)) for i, c in enumerate(X.columns) if c != "const"}
tukey = pairwise_tukeyhsd(df["response"], df["group"])
z, p = proportions_ztest([int(df["converted"].sum()), 40], [len(df), 100])
res = sm.OLS(df["response"], X).fit()
bp = het_breuschpagan(res.resid, res.model.exog)
print(json.dumps({"vif": vif, "tukey_groups": len(tukey.groupsunique), "z_p": float(p), "bp_p": float(bp[1])}))
