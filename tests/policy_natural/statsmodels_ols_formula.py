import json
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf

df = pd.read_csv("/data/housing.csv")
model = smf.ols("price ~ area + C(district) + rooms", data=df).fit()
anova = sm.stats.anova_lm(model, typ=2)
X = sm.add_constant(df[["area", "rooms"]])
robust = sm.OLS(df["price"], X).fit(cov_type="HC3")
summary = {
    "r2": round(float(model.rsquared), 4),
    "adj_r2": round(float(model.rsquared_adj), 4),
    "area_coef": round(float(robust.params["area"]), 4),
    "area_p": float(robust.pvalues["area"]),
    "anova_rows": len(anova),
}
print(json.dumps(summary))
