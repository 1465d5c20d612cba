import json
import pandas as pd

df = pd.read_csv("/data/estimated_numbers.csv")
df["deaths"] = pd.to_numeric(df["No. of deaths"].str.split("[", regex=False).str[0].str.strip(),
                             errors="coerce").astype("Int64")
row = df.loc[df["deaths"].idxmax()]
print(json.dumps({"max_deaths_country": row["Country"], "max_deaths_year": int(row["Year"])}))
