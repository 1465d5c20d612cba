# expect: allow
# policy: escalate
from sklearn.linear_model import LinearRegression
import numpy as np
m = LinearRegression().fit(np.arange(10).reshape(-1, 1), np.arange(10) * 2.0)
print(m.coef_[0])
