import json
import matplotlib as mpl
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

mpl.rcParams["figure.dpi"] = 110
with sns.axes_style("ticks"), sns.plotting_context("talk"):
    df = pd.read_csv("/data/weather.csv", parse_dates=["date"])
    fig, ax = plt.subplots()
    sns.lineplot(data=df, x="date", y="temp", hue="city", ax=ax, errorbar=None)
    sns.despine(fig)
    ax.legend(title="City", **{"loc": "upper left", "frameon": False})
    fig.savefig("/out/temps.png")
print(json.dumps({"cities": int(df["city"].nunique())}))
