import json
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split

df = pd.read_csv("/data/titanic.csv").dropna(subset=["Age", "Sex", "Fare"])
X = df[["Age", "Sex", "Fare"]].assign(Sex=(df["Sex"] == "male").astype(int))
X_train, X_test, y_train, y_test = train_test_split(X, df["Survived"], test_size=0.3, random_state=42)
model = LogisticRegression().fit(X_train, y_train)
print(json.dumps({"classifier_accuracy": round(accuracy_score(y_test, model.predict(X_test)), 2)}))
