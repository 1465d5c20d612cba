import json
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

df = pd.read_csv("/data/flights.csv")
table = df.pivot_table(index="month", columns="year", values="passengers", aggfunc="sum")
palette = sns.color_palette("mako", as_cmap=True)
fig, ax = plt.subplots(figsize=(10, 6))
sns.heatmap(table, annot=True, fmt="d", cmap=palette, linewidths=0.5, ax=ax)
ax.set_title("Passengers per month")
fig.savefig("/out/heat.png")
print(json.dumps({"max": int(np.nanmax(table.values))}))
