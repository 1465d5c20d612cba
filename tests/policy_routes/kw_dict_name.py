# expect: deny unsafe-deserialization
import numpy as np
options = {"mmap_mode": None, "allow_pickle": True}
a = np.load("/data/a.npy", **options)  # refused here
