# expect: deny process
# scikit-learn (allowed) loads joblib, which may load multiprocessing; the
# code itself still may not.
from sklearn.linear_model import LinearRegression
import multiprocessing
with multiprocessing.Pool(2) as pool:
    print(pool.map(abs, [-1, -2]))
