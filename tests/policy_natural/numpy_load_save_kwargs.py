import json
import os
import numpy as np

arr = np.load("/data/matrix.npy", allow_pickle=False)
opts = {"mmap_mode": "r"}
view = np.load("/data/matrix.npy", **opts)
np.save("/out/normalized.npy", (arr - arr.mean()) / arr.std())
with open("/out/summary.txt", "w") as f:
    f.write("shape: {}\n".format(arr.shape))
    f.flush()
    os.fsync(f.fileno())
print(json.dumps({"shape": list(view.shape), "mean": float(arr.mean())}))
