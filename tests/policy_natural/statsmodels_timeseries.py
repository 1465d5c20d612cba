import json
import pandas as pd
from statsmodels.tsa.seasonal import seasonal_decompose
from statsmodels.tsa.stattools import adfuller, acf
from statsmodels.tsa.arima.model import ARIMA
from statsmodels.tsa.holtwinters import ExponentialSmoothing

s = pd.read_csv("/data/traffic.csv", parse_dates=["day"], index_col="day")["visits"].asfreq("D").interpolate()
dec = seasonal_decompose(s, period=7)
stat, pvalue, *_ = adfuller(s.dropna())
fit = ARIMA(s, order=(1, 1, 1)).fit()
hw = ExponentialSmoothing(s, trend="add", seasonal="add", seasonal_periods=7).fit()
print(json.dumps({
    "adf_p": float(pvalue),
    "acf1": float(acf(s, nlags=1)[1]),
    "forecast": [round(float(v), 2) for v in fit.forecast(3)],
    "hw_next": float(hw.forecast(1).iloc[0]),
    "trend_last": float(dec.trend.dropna().iloc[-1]),
}))
