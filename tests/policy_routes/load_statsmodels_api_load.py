# expect: deny unsafe-deserialization
import statsmodels.api as sm
model = sm.load("/data/model.pkl")  # refused here
