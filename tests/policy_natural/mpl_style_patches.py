import json
import matplotlib.pyplot as plt
import matplotlib.patches as mpatches
import pandas as pd

plt.style.use("ggplot")
df = pd.read_csv("/data/regions.csv")
share = df.groupby("region")["revenue"].sum().sort_values(ascending=False)
fig, ax = plt.subplots()
bars = ax.barh(share.index, share.values)
ax.bar_label(bars, fmt="%.0f")
handles = [mpatches.Patch(color="C0", label="revenue")]
ax.legend(handles=handles, loc="lower right")
fig.savefig("/out/regions.png")
print(json.dumps({"top": share.index[0], "regions": len(share)}))
