# expect: deny unsafe-deserialization
import numpy as np
base = {"allow_pickle": True}
a = np.load("/data/a.npy", **{**base, "mmap_mode": None})  # refused here
