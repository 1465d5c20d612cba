# expect: deny unsafe-deserialization
import numpy as np
a = np.load("/data/a.npy", **dict(allow_pickle=True))  # refused here
