import json
import pandas as pd
import seaborn as sns

df = pd.read_csv("/data/penguins.csv").dropna()
grid = sns.FacetGrid(df, col="species", hue="sex", height=3)
grid.map_dataframe(sns.scatterplot, x="bill_length_mm", y="flipper_length_mm")
grid.add_legend()
grid.savefig("/out/facets.png")
pair = sns.pairplot(df, vars=["bill_length_mm", "bill_depth_mm", "body_mass_g"], hue="species", corner=True)
pair.savefig("/out/pairs.png")
lm = sns.lmplot(data=df, x="bill_length_mm", y="body_mass_g", hue="species")
lm.savefig("/out/lm.png")
print(json.dumps({"species": sorted(df["species"].unique().tolist())}))
