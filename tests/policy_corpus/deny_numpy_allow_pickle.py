# expect: deny unsafe-deserialization
import numpy as np
arr = np.load("/data/x.npy", allow_pickle=True)
