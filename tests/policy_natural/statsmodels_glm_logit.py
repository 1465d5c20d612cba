import json
import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf

df = pd.read_csv("/data/churn.csv")
logit = smf.logit("churned ~ tenure + monthly_charges", data=df).fit(disp=0)
odds = np.exp(logit.params)
glm = sm.GLM(df["visits"], sm.add_constant(df[["tenure"]]), family=sm.families.Poisson()).fit()
margeff = logit.get_margeff().summary_frame()
print(json.dumps({"odds_tenure": float(odds["tenure"]), "glm_aic": float(glm.aic), "margins": len(margeff)}))
