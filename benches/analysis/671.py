import json
import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

df = pd.read_csv("/data/my_test_01.csv")
features = ["MedInc", "AveRooms", "Population", "Latitude", "Longitude"]
X_train, X_test, y_train, y_test = train_test_split(
    df[features], df["MedianHouseValue"], test_size=0.3, random_state=42)
model = LinearRegression().fit(X_train, y_train)
print(json.dumps({"mse": round(mean_squared_error(y_test, model.predict(X_test)), 3)}))
