# expect: deny unsafe-deserialization
import numpy as np
kw = {}
kw["allow_" + "pickle"] = True
a = np.load("/data/a.npy", **kw)  # refused here
