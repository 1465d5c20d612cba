# expect: allow
import pandas as pd
name = "sales.csv"
df = pd.read_csv("/data/" + name)
rows = open(f"/data/{name}").read().splitlines()
df.to_csv("/tmp/scratch.csv")
print(len(df), len(rows), len(pd.read_csv("/tmp/scratch.csv")), open("notes.txt").read())
