import json
import statsmodels.api as sm

data = sm.datasets.macrodata.load_pandas().data
res = sm.OLS(data["realcons"], sm.add_constant(data[["realgdp"]])).fit()
params = res.params.to_dict()
print(json.dumps({"rows": len(data), "slope": round(params["realgdp"], 4)}))
