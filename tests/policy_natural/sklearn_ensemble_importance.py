import json
import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestRegressor, GradientBoostingRegressor
from sklearn.inspection import permutation_importance
from sklearn.model_selection import cross_val_score, KFold
from sklearn.metrics import mean_absolute_error

df = pd.read_csv("/data/energy.csv")
X, y = df.drop(columns=["load"]), df["load"]
kf = KFold(n_splits=5, shuffle=True, random_state=1)
rf = RandomForestRegressor(n_estimators=200, random_state=1, n_jobs=1)
scores = cross_val_score(rf, X, y, cv=kf, scoring="neg_mean_absolute_error")
rf.fit(X, y)
imp = permutation_importance(rf, X, y, n_repeats=5, random_state=1)
top = sorted(zip(X.columns, imp.importances_mean), key=lambda t: -t[1])[:3]
gb = GradientBoostingRegressor(random_state=1).fit(X, y)
print(json.dumps({"cv_mae": float(-np.mean(scores)), "top": [t[0] for t in top], "gb_mae": float(mean_absolute_error(y, gb.predict(X)))}))
