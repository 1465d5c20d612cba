import json
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

sns.set_theme(style="whitegrid", context="notebook")
df = pd.read_csv("/data/tips.csv")
g = sns.histplot(data=df, x="total_bill", hue="time", kde=True, element="step")
g.set(title="Total bill by time")
plt.savefig("/out/bills.png")
plt.close()
ax = sns.boxplot(data=df, x="day", y="tip", palette="pastel", hue="day", legend=False)
plt.savefig("/out/tips.png")
print(json.dumps({"rows": len(df), "days": int(df["day"].nunique())}))
