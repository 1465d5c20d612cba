import json
import matplotlib.pyplot as plt
from matplotlib import colors, cm
import numpy as np
import pandas as pd

df = pd.read_csv("/data/metrics.csv")
corr = df.select_dtypes("number").corr()
fig, ax = plt.subplots()
norm = colors.TwoSlopeNorm(vmin=-1, vcenter=0, vmax=1)
im = ax.imshow(corr.values, cmap=cm.RdBu_r, norm=norm)
ax.set_xticks(range(len(corr)), labels=corr.columns, rotation=45, ha="right")
ax.set_yticks(range(len(corr)), labels=corr.columns)
for i in range(len(corr)):
    for j in range(len(corr)):
        ax.text(j, i, f"{corr.iat[i, j]:.2f}", ha="center", va="center", fontsize=7)
fig.colorbar(im, ax=ax)
fig.savefig("/out/corr.png", bbox_inches="tight")
print(json.dumps({"pairs": int(corr.size)}))
