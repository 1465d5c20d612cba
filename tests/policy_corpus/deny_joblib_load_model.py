# expect: deny unsafe-deserialization
# A fitted scikit-learn model from a file is a pickle: loading it runs code
# chosen by whoever wrote it.
import joblib
model = joblib.load("/data/model.joblib")
print(model.predict([[1, 2, 3]]))
