# expect: allow
import json
import pandas as pd
orders = pd.read_json("/data/orders.jsonl", lines=True)
customers = pd.read_csv("/data/customers.csv")
merged = orders.merge(customers, on="customer_id", how="left")
result = {"orders": int(len(merged)), "revenue": float(merged["total"].sum())}
print(json.dumps(result))
