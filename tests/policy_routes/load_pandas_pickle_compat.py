# expect: deny unsafe-deserialization
from pandas.compat import pickle_compat  # refused here
with open("/data/frame.pkl", "rb") as f:
    obj = pickle_compat.load(f)
