# expect: allow
import statistics
import csv
with open("/data/scores.csv", newline="") as fh:
    scores = [float(row["score"]) for row in csv.DictReader(fh)]
print(statistics.mean(scores), statistics.median(scores), statistics.stdev(scores))
