# expect: allow
import json
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf
df = pd.read_csv("/data/wages.csv")
ols = smf.ols("wage ~ educ + exper + C(female)", data=df).fit()
logit = smf.logit("union ~ wage + educ", data=df).fit(disp=0)
X = sm.add_constant(df[["educ", "exper"]])
plain = sm.OLS(df.wage, X).fit()
print(json.dumps({"coef_educ": float(ols.params["educ"]), "p_educ": float(ols.pvalues["educ"]),
                  "r2": float(ols.rsquared), "logit_wage": float(logit.params["wage"]),
                  "plain_r2": float(plain.rsquared)}))
