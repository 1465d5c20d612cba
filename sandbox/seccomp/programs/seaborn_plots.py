# seaborn's statistical charts (on matplotlib, Agg): distributions, boxes,
# regressions (statsmodels-free), a correlation heatmap, a pair grid.
import os
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
rng = np.random.default_rng(2)
df = pd.DataFrame({"x": rng.normal(size=300), "g": rng.choice(["a", "b", "c"], 300)})
df["y"] = 2 * df.x + rng.normal(size=300)
sns.set_theme(style="whitegrid")
fig, ax = plt.subplots(2, 3, figsize=(12, 7))
sns.histplot(df, x="x", hue="g", kde=True, ax=ax[0, 0])
sns.boxplot(df, x="g", y="y", ax=ax[0, 1])
sns.violinplot(df, x="g", y="x", ax=ax[0, 2])
sns.regplot(df, x="x", y="y", ax=ax[1, 0])
sns.heatmap(df[["x", "y"]].corr(), annot=True, ax=ax[1, 1])
sns.barplot(df, x="g", y="y", errorbar=("ci", 95), seed=0, ax=ax[1, 2])
fig.savefig("/out/seaborn.png", dpi=80)
sns.pairplot(df, hue="g").savefig("/out/pairs.png", dpi=60)
print(sorted(os.listdir("/out")))
