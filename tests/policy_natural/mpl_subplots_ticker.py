import json
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, MaxNLocator
import matplotlib.dates as mdates
import pandas as pd

df = pd.read_csv("/data/orders.csv", parse_dates=["created"])
daily = df.groupby(df["created"].dt.date)["value"].agg(["count", "sum"])
fig, (a1, a2) = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
a1.bar(daily.index, daily["count"], color="0.6")
a1.yaxis.set_major_locator(MaxNLocator(integer=True))
a2.plot(daily.index, daily["sum"], color="C3")
a2.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "${:,.0f}".format(v)))
a2.xaxis.set_major_formatter(mdates.DateFormatter("%b %d"))
plt.rcParams.update({"font.size": 9})
fig.savefig("/out/daily.png")
print(json.dumps({"days": len(daily)}))
