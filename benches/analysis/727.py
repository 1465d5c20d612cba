import json
import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

df = pd.read_csv("/data/auto-mpg.csv")
X_train, X_test, y_train, y_test = train_test_split(
    df[["weight", "acceleration"]], df["mpg"], test_size=0.2, random_state=42)
model = LinearRegression().fit(X_train, y_train)
print(json.dumps({"test_mse": round(mean_squared_error(y_test, model.predict(X_test)), 2)}))
