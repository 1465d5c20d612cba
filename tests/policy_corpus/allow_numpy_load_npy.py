# expect: allow
import numpy as np
arr = np.load("/data/matrix.npy")
np.save("/out/matrix_t.npy", arr.T)
print(arr.shape)
