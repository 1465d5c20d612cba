import json
import pandas as pd

df = pd.read_csv("/data/estimated_numbers.csv")
deaths = df["No. of deaths_max"].dropna()
q1, q3 = deaths.quantile([0.25, 0.75])
iqr = q3 - q1
is_out = (deaths < q1 - 1.5 * iqr) | (deaths > q3 + 1.5 * iqr)
countries = df.loc[is_out[is_out].index, "Country"].nunique()
print(json.dumps({
    "no_of_countries_with_outliers": int(countries),
    "mean_no_of_deaths_with_outliers": round(deaths.mean(), 2),
    "mean_no_of_deaths_without_outliers": round(deaths[~is_out].mean(), 2),
}))
