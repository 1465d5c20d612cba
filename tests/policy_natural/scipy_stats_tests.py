import json
import numpy as np
import pandas as pd
from scipy import stats
from scipy.optimize import curve_fit
from scipy.interpolate import interp1d

df = pd.read_csv("/data/trial.csv")
a = df.loc[df["arm"] == "A", "outcome"]
b = df.loc[df["arm"] == "B", "outcome"]
t = stats.ttest_ind(a, b, equal_var=False)
u = stats.mannwhitneyu(a, b)
chi2, p, dof, _ = stats.chi2_contingency(pd.crosstab(df["arm"], df["event"]))
def model(x, k, c):
    return c * np.exp(-k * x)
popt, _ = curve_fit(model, df["day"], df["level"], p0=(0.1, 1.0))
f = interp1d(df["day"], df["level"], kind="linear", fill_value="extrapolate")
print(json.dumps({"t_p": float(t.pvalue), "u_p": float(u.pvalue), "chi2_p": float(p), "k": float(popt[0]), "day_30": float(f(30))}))
