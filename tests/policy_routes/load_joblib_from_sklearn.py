# expect: deny import-denied
from sklearn.utils.validation import joblib  # refused here
model = joblib.load("/data/model.joblib")
