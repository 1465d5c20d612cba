import json
import pandas as pd

df = pd.read_csv("/data/accounts.csv")
stats = df.groupby("segment")["balance"].agg(["mean", "median", "count"])
lines = []
for seg, row in stats.iterrows():
    lines.append("{seg}: mean={mean:,.2f} median={median:,.2f} n={count}".format(seg=seg, **row.to_dict()))
header = "{:<12}{:>10}".format("segment", "count")
template = "Total accounts: {total}"
summary = template.format(total=int(stats["count"].sum()))
with open("/out/report.md", "w") as fh:
    fh.write("\n".join([header, *lines, summary]))
print(json.dumps({"segments": len(stats), "summary": summary}))
