import json
import pandas as pd
from sklearn.preprocessing import MinMaxScaler

df = pd.read_csv("/data/titanic.csv")
df["Embarked"] = df["Embarked"].fillna(df["Embarked"].mode()[0])
df["Fare"] = MinMaxScaler().fit_transform(df[["Fare"]]).ravel()
df["Sex"] = df["Sex"].map({"male": 1, "female": 0})
counts = df["Sex"].value_counts()
fare = df["Fare"]
print(json.dumps({
    "sex_encoded_count": f"{counts[0]}, {counts[1]}",
    "fare_after_scaling": f"{fare.min():.2f}, {fare.max():.2f}, {fare.mean():.4f}",
}))
