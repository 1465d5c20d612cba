# expect: deny unsafe-deserialization
import pandas.io.pickle as pp
df = pp.read_pickle("/data/frame.pkl")  # refused here
