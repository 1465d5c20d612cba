import json
import pandas as pd
from scipy import stats
from sklearn.metrics import mean_absolute_error
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeRegressor

df = pd.read_csv("/data/my_test_01.csv")
features = ["MedInc", "AveRooms", "HouseAge", "Latitude", "Longitude"]
X_train, X_test, y_train, y_test = train_test_split(
    df[features], df["MedianHouseValue"], test_size=0.3, random_state=42)
scaler = StandardScaler().fit(X_train)
model = DecisionTreeRegressor(max_depth=5, random_state=42).fit(scaler.transform(X_train), y_train)
pred = model.predict(scaler.transform(X_test))
r, _ = stats.pearsonr(pred, y_test)
print(json.dumps({"mean_absolute_error": round(mean_absolute_error(y_test, pred), 4), "pearson_coefficient": round(r, 4)}))
