# expect: allow
import json
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
df = pd.read_csv("/data/tips.csv")
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
sns.boxplot(data=df, x="day", y="total_bill", ax=axes[0])
sns.heatmap(df.select_dtypes("number").corr(), annot=True, ax=axes[1])
fig.savefig("/out/tips.png", dpi=100)
g = sns.regplot(data=df, x="total_bill", y="tip")
g.figure.savefig("/out/regression.png")
print(json.dumps({"rows": int(len(df))}))
