# expect: deny unsafe-deserialization
import numpy as np
kw = dict(mmap_mode=None)
kw.update(allow_pickle=True)
a = np.load("/data/a.npy", **kw)  # refused here
