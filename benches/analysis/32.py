import json
import pandas as pd

df = pd.read_csv("/data/imp.score.ldlr.metabolome.csv")
s = df["importance.score"].dropna()
print(json.dumps({"importance_score_mean": round(s.mean(), 2), "importance_score_std": round(s.std(), 2)}))
