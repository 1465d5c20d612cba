# expect: deny unsafe-deserialization
import pickle
obj = pickle.loads(open("/data/x.pkl", "rb").read())
