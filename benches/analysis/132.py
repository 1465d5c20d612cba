import json
import numpy as np
import pandas as pd

df = pd.read_csv("/data/titanic.csv")
z = (df["Fare"] - df["Fare"].mean()) / df["Fare"].std()
print(json.dumps({"outlier_count": int((np.abs(z) > 3).sum())}))
