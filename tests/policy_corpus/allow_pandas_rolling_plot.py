# expect: allow
import pandas as pd
import matplotlib.pyplot as plt
s = pd.read_csv("/data/prices.csv", index_col="date", parse_dates=True)["close"]
ma = s.rolling(20).mean()
ax = s.plot(label="close")
ma.plot(ax=ax, label="MA20")
ax.legend()
plt.tight_layout()
plt.savefig("/out/prices.png")
