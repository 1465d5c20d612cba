import json
import numpy as np
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/imp.score.ldlr.metabolome.csv")
z = stats.zscore(df["row retention time"], nan_policy="omit")
outliers = int((np.abs(z) > 3).sum())
df = df[~(np.abs(z) > 3)]
print(json.dumps({"removed_outliers_count": outliers}))
