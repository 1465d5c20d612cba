# expect: deny unsafe-deserialization
import numpy as np
np.lib.npyio.load("/data/a.npy", allow_pickle=True)
