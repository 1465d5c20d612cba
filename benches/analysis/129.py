import json
import numpy as np
import pandas as pd

df = pd.read_csv("/data/titanic.csv")
fare = df["Fare"]
print(json.dumps({"mean_fare": round(fare.mean(), 2), "std_dev_fare": round(float(np.std(fare)), 2)}))
