import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
x = np.linspace(0, 10, 200)
fig, ax = plt.subplots(2, 1)
ax[0].plot(x, np.sin(x), label="sin")
ax[0].legend()
ax[1].hist(np.random.default_rng(2).normal(size=1000), bins=30)
pd.Series(np.cos(x)).plot(ax=ax[1])
fig.tight_layout()
fig.savefig("/out/chart.png")
fig.savefig("/out/chart.svg")
print("ok")
