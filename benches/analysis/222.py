import json
import pandas as pd
from scipy import stats

df = pd.read_csv("/data/ferret-Pitt-2-preinf-lib2-100_sitediffsel.csv")
x = df["abs_diffsel"]
skew = round(stats.skew(x), 2)
kurt = round(stats.kurtosis(x), 2)
normal = -0.5 <= skew <= 0.5 and -0.5 <= kurt <= 0.5
print(json.dumps({
    "skewness_value": skew,
    "kurtosis_value": kurt,
    "message": "The data is normally distributed." if normal else "The data is not normally distributed.",
}))
