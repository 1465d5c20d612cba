import json
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.metrics import classification_report, roc_auc_score

df = pd.read_csv("/data/customers.csv")
y = df.pop("churned")
num = df.select_dtypes("number").columns.tolist()
cat = df.select_dtypes("object").columns.tolist()
pre = ColumnTransformer([
    ("num", Pipeline([("impute", SimpleImputer()), ("scale", StandardScaler())]), num),
    ("cat", OneHotEncoder(handle_unknown="ignore"), cat),
])
pipe = Pipeline([("pre", pre), ("clf", LogisticRegression(max_iter=1000))])
params = {"clf__C": [0.1, 1.0, 10.0]}
grid = GridSearchCV(pipe, params, cv=5, scoring="roc_auc", n_jobs=1)
X_tr, X_te, y_tr, y_te = train_test_split(df, y, test_size=0.25, random_state=0, stratify=y)
grid.fit(X_tr, y_tr)
proba = grid.predict_proba(X_te)[:, 1]
report = classification_report(y_te, grid.predict(X_te), output_dict=True)
print(json.dumps({"best": grid.best_params_, "auc": float(roc_auc_score(y_te, proba)), "f1": report["weighted avg"]["f1-score"]}))
