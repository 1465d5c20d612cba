import json
import pandas as pd

df = pd.read_csv("/data/city_departments_in_current_budget.csv")
start = pd.to_datetime(df["budget_year_start"], format="%m/%d/%Y")
end = pd.to_datetime(df["budget_year_end"], format="%m/%d/%Y")
days = (end - start).dt.days
print(json.dumps({"average_duration": round(sum(days) / len(days))}))
