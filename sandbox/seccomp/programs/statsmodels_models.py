# statsmodels as analyses use it: OLS and logit through formulas (patsy and
# formulaic), their summaries, GLM, ANOVA, a time-series model.
import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm
from statsmodels.tsa.arima.model import ARIMA
rng = np.random.default_rng(1)
n = 400
df = pd.DataFrame({"educ": rng.integers(8, 20, n), "exper": rng.integers(0, 40, n),
                   "female": rng.integers(0, 2, n), "region": rng.choice(list("nsew"), n)})
df["wage"] = 2 + 0.6 * df.educ + 0.1 * df.exper - 1.2 * df.female + rng.normal(0, 1, n)
df["union"] = (df.wage + rng.normal(0, 2, n) > df.wage.median()).astype(int)
ols = smf.ols("wage ~ educ + exper + C(female) + C(region)", data=df).fit()
print(ols.summary())
print(ols.params, ols.pvalues, ols.rsquared, ols.conf_int())
print(anova_lm(ols, typ=2))
logit = smf.logit("union ~ wage + educ", data=df).fit(disp=0)
print(logit.summary2())
X = sm.add_constant(df[["educ", "exper"]])
print(sm.OLS(df.wage, X).fit(cov_type="HC3").bse)
print(sm.GLM(df.union, X, family=sm.families.Binomial()).fit().aic)
series = pd.Series(np.cumsum(rng.normal(0, 1, 120)), index=pd.date_range("2020-01-01", periods=120, freq="MS"))
print(ARIMA(series, order=(1, 1, 0)).fit().forecast(3))
print(sm.stats.diagnostic.het_breuschpagan(ols.resid, ols.model.exog)[1])
