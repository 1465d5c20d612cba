import json
import matplotlib.pyplot as plt
import numpy as np

rng = np.random.default_rng(7)
x = rng.normal(loc=10, scale=2, size=500)
counts, edges, patches = plt.hist(x, bins=30, edgecolor="white")
mean = float(np.mean(x))
plt.axvline(mean, color="k", linestyle="--")
plt.annotate("mean = {:.2f}".format(mean), xy=(mean, counts.max()), xytext=(mean + 1, counts.max()))
plt.xlabel("value")
plt.savefig("/out/hist.png")
print(json.dumps({"mean": round(mean, 3), "bins": len(counts)}))
