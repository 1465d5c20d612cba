# expect: allow
import json
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.preprocessing import StandardScaler
df = pd.read_csv("/data/churn.csv")
X, y = df.drop(columns=["churned"]), df["churned"]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=42)
scaler = StandardScaler().fit(X_train)
model = LogisticRegression(max_iter=500, random_state=42).fit(scaler.transform(X_train), y_train)
acc = accuracy_score(y_test, model.predict(scaler.transform(X_test)))
cv = cross_val_score(RandomForestClassifier(n_estimators=50, random_state=42), X, y, cv=5, n_jobs=-1)
print(json.dumps({"accuracy": float(acc), "cv_mean": float(cv.mean())}))
