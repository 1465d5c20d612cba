# expect: deny import-denied
import sklearn.utils.parallel as par
model = par.joblib.load("/data/model.joblib")  # refused here
