import json
import pandas as pd
from sklearn.ensemble import RandomForestRegressor
from sklearn.model_selection import train_test_split

df = pd.read_csv("/data/3901.csv")
before = len(df)
df = df.drop_duplicates()
duplicates = before - len(df)
df["USFLUX"] = df["USFLUX"].fillna(df["USFLUX"].mean())
df["MEANGAM_MEANGBZ_DIFF"] = df["MEANGAM"] - df["MEANGBZ"]
X = df[["MEANJZH", "TOTUSJZ", "MEANGBT"]]
y = df["TOTUSJH"]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=42)
model = RandomForestRegressor(n_estimators=100, random_state=42).fit(X_train, y_train)
print(json.dumps({
    "duplicate_count": duplicates,
    "usflux_mean": round(df["USFLUX"].mean(), 2),
    "new_feature_mean": round(df["MEANGAM_MEANGBZ_DIFF"].mean(), 2),
    "model_accuracy": round(model.score(X_test, y_test) * 100, 3),
}))
