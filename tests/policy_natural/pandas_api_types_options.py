import json
import pandas as pd
from pandas.api.types import is_numeric_dtype, CategoricalDtype

pd.set_option("display.max_columns", 20)
pd.options.display.float_format = "{:.2f}".format
df = pd.read_csv("/data/inventory.csv")
numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]
size = CategoricalDtype(["S", "M", "L"], ordered=True)
df["size"] = df["size"].astype(size)
desc = df[numeric].describe().round(2)
line = "{0[count]:.0f} items, mean {0[mean]:.2f}".format(desc[numeric[0]])
print(json.dumps({"numeric": numeric, "line": line, "is_num": bool(is_numeric_dtype(df[numeric[0]]))}))
