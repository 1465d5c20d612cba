import json
import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

df = pd.read_csv("/data/cost_data_with_errors.csv")
cols = ["max_sust_wind", "damage_USD", "min_p"]
df[cols] = df[cols].fillna(df[cols].mean())
X_train, X_test, y_train, y_test = train_test_split(
    df[["damage_USD", "min_p"]], df["max_sust_wind"], test_size=0.2, random_state=42)
model = LinearRegression().fit(X_train, y_train)
print(json.dumps({"mean_squared_error": round(mean_squared_error(y_test, model.predict(X_test)), 4)}))
