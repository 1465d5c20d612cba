# expect: allow
import pandas as pd
df = pd.read_csv("/data/x.csv")
year = 2024
print(df.query("a > 1 and b < 3"), df.query(f"year == {year}"), df.eval("c = a + b"))
