import json
import pandas as pd
from sklearn.linear_model import Ridge, Lasso
from sklearn.model_selection import train_test_split
from sklearn.metrics import r2_score

df = pd.read_csv("/data/ads.csv")
X_tr, X_te, y_tr, y_te = train_test_split(df[["tv", "radio", "news"]], df["sales"], random_state=3)
configs = {"ridge": (Ridge, {"alpha": 1.0}), "lasso": (Lasso, {"alpha": 0.05, "max_iter": 5000})}
scores = {}
for name, (cls, kwargs) in configs.items():
    model = cls(**kwargs).fit(X_tr, y_tr)
    scores[name] = round(float(r2_score(y_te, model.predict(X_te))), 4)
    scores[name + "_params"] = model.get_params()["alpha"]
print(json.dumps(scores))
