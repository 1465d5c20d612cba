import json
import pandas as pd

df = pd.read_csv("/data/baseball_data.csv")
runs = df.groupby("indicator_of_free_agency_eligibility")["number_of_runs"].mean()
print(json.dumps({
    "average_runs_by_eligible_for_free_agency": round(runs[1.0], 2),
    "average_runs_by_not_eligible_for_free_agency": round(runs[0.0], 2),
}))
