from scipy import stats
import json
r = stats.ttest_ind([1,2,3,4,5,6],[2,3,4,5,6,9])
print(json.dumps({"t": float(r.statistic), "p": float(r.pvalue)}))
