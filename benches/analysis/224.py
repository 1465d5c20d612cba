import json
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split

df = pd.read_csv("/data/ferret-Pitt-2-preinf-lib2-100_sitediffsel.csv")
df["selection"] = (df["positive_diffsel"] > df["positive_diffsel"].mean()).map({True: "high", False: "low"})
X_train, X_test, y_train, y_test = train_test_split(
    df[["positive_diffsel"]], df["selection"], test_size=0.2, random_state=42)
model = LogisticRegression(solver="liblinear", random_state=42).fit(X_train, y_train)
print(json.dumps({"accuracy_score": round(accuracy_score(y_test, model.predict(X_test)), 2)}))
