# expect: allow
import numpy as np
import matplotlib.pyplot as plt
data = np.loadtxt("/data/values.txt")
plt.hist(data, bins=30)
plt.xlabel("value")
plt.savefig("/out/hist.svg")
