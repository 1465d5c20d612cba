# expect: deny unsafe-deserialization
from statsmodels.iolib.smpickle import load_pickle  # refused here
model = load_pickle("/data/model.pkl")
