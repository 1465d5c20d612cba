# Conversion per day (paid / leads) and the average of the daily conversions,
# from /data/sales.csv. The last line of stdout is the JSON result.
import json

import pandas as pd

sales = pd.read_csv("/data/sales.csv")
daily = sales.groupby("day", sort=True)[["leads", "paid"]].sum()
daily["conversion"] = daily["paid"] / daily["leads"]

result = {
    "by_day": [
        {
            "day": day,
            "leads": int(row.leads),
            "paid": int(row.paid),
            "conversion": float(row.conversion),
        }
        for day, row in daily.iterrows()
    ],
    "average_conversion": float(daily["conversion"].mean()),
}
print(json.dumps(result))
