# expect: deny unsafe-deserialization
from statsmodels.regression.linear_model import OLSResults
res = OLSResults.load("/data/model.pkl")  # refused here
