import json
import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

df = pd.read_csv("/data/abalone.csv")
r = df["Length"].corr(df["Whole weight"])
df["volume"] = df["Length"] * df["Diameter"] * df["Height"]
base = ["Length", "Diameter", "Height", "Whole weight", "Shucked weight", "Viscera weight", "Shell weight"]


def rmse(features):
    X_train, X_test, y_train, y_test = train_test_split(
        df[features], df["Rings"], test_size=0.3, random_state=42)
    model = LinearRegression().fit(X_train, y_train)
    return float(np.sqrt(mean_squared_error(y_test, model.predict(X_test))))


print(json.dumps({
    "correlation_coefficient": round(r, 4),
    "original_model_rmse": round(rmse(base), 4),
    "volume_feature_model_rmse": round(rmse(base + ["volume"]), 4),
}))
