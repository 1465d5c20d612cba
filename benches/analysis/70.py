import json
import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

df = pd.read_csv("/data/beauty and the labor market.csv")
features = ["exper", "looks", "union", "goodhlth", "black", "female", "married",
            "south", "bigcity", "smllcity", "service", "educ"]
X_train, X_test, y_train, y_test = train_test_split(
    df[features], df["wage"], test_size=0.3, random_state=42)
model = LinearRegression().fit(X_train, y_train)
rmse = np.sqrt(mean_squared_error(y_test, model.predict(X_test)))
print(json.dumps({"RMSE": round(float(rmse), 2)}))
