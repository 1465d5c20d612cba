# expect: deny unsafe-deserialization
import numpy as np
a = np.load("/data/a.npy", **{"allow_pickle": True})  # refused here
