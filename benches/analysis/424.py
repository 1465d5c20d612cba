import json
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import train_test_split

df = pd.read_csv("/data/bitconnect_price.csv")
df["Category"] = pd.cut(df["Close"], bins=[-float("inf"), 500, 1000, float("inf")],
                        labels=["Low", "Medium", "High"], right=False)
features = ["Open", "High", "Low"]
X_train, X_test, y_train, y_test = train_test_split(
    df[features], df["Category"], test_size=0.25, random_state=42)
model = RandomForestClassifier(random_state=42).fit(X_train, y_train)
ranked = pd.Series(model.feature_importances_, index=features).sort_values(ascending=False)
out = {"accuracy": round(model.score(X_test, y_test), 2)}
out.update({f"feature{i}": name for i, name in enumerate(ranked.index, start=1)})
print(json.dumps(out))
