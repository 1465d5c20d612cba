import json
import numpy as np
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/titanic.csv")
z = stats.zscore(df["Age"].dropna())
print(json.dumps({"outliers_count": int((np.abs(z) > 3).sum())}))
