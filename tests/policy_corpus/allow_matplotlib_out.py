# expect: allow
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
df = pd.read_csv("/data/temps.csv")
fig, ax = plt.subplots(figsize=(8, 4))
ax.plot(df["day"], df["temp"], marker="o")
ax.set_title("Temperature")
fig.savefig("/out/temps.png", dpi=120)
