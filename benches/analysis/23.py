import json
import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

df = pd.read_csv("/data/unemployement_industry.csv").dropna(subset=["Mar.2019", "Mar.2020"])
X_train, X_test, y_train, y_test = train_test_split(
    df[["Mar.2019"]], df["Mar.2020"], test_size=0.3, random_state=42)
model = LinearRegression().fit(X_train, y_train)
mse = mean_squared_error(y_test, model.predict(X_test))
print(json.dumps({"Mean_Squared_Error": round(mse, 2)}))
