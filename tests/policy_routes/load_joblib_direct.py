# expect: deny unsafe-deserialization
import joblib
model = joblib.load("/data/model.joblib")  # refused here
