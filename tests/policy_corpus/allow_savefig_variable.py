# expect: allow
import matplotlib.pyplot as plt
import numpy as np
OUT_DIR = "/out"
for i, k in enumerate([1, 2, 3]):
    fig, ax = plt.subplots()
    ax.plot(np.arange(10) ** k)
    fig.savefig(f"{OUT_DIR}/power_{k}.png")
    plt.close(fig)
np.savetxt("/out/values.csv", np.arange(5), delimiter=",")
