# expect: allow
import json
import numpy as np
import scipy.optimize as opt
from scipy.sparse import diags
from scipy.sparse.linalg import spsolve
x = np.linspace(0, 4, 50)
y = 2.5 * np.exp(-1.3 * x) + 0.1
params, _ = opt.curve_fit(lambda x, a, b, c: a * np.exp(-b * x) + c, x, y, p0=(1, 1, 0))
A = diags([-1, 2, -1], [-1, 0, 1], shape=(100, 100), format="csc")
u = spsolve(A, np.ones(100))
print(json.dumps({"params": params.tolist(), "u_max": float(u.max())}))
