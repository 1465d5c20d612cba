import json
import numpy as np
import pandas as pd

df = pd.read_csv("/data/test_ave.csv")
df["AgeGroup"] = pd.cut(df["Age"], bins=[0, 12, 19, 59, np.inf],
                        labels=["Child", "Teenager", "Adult", "Elderly"], include_lowest=True)
means = df.groupby("AgeGroup", observed=True)["Fare"].mean().round(2)
print(json.dumps({f"mean_fare_{g.lower()}": float(v) for g, v in means.items()}))
