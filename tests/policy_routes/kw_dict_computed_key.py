# expect: deny unsafe-deserialization
import numpy as np
keys = ["allow_pickle"]
kw = dict(zip(keys, [True]))
a = np.load("/data/a.npy", **kw)  # refused here
