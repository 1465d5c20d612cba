# expect: allow
# Was deny_import_not_allowed_scipy.py: scipy.* is in the default allowlist
# since the image carries SciPy (issue 23).
import json
import pandas as pd
from scipy import stats
df = pd.read_csv("/data/scores.csv")
a, b = df[df.group == "a"].score, df[df.group == "b"].score
t = stats.ttest_ind(a, b, equal_var=False)
w = stats.shapiro(df.score)
r = stats.pearsonr(df.score, df.hours)
print(json.dumps({"t": float(t.statistic), "p": float(t.pvalue), "shapiro_p": float(w.pvalue),
                  "r": float(r.statistic), "norm_cdf": float(stats.norm.cdf(1.0))}))
