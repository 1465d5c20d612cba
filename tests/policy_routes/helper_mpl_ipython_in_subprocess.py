# expect: deny process
import matplotlib.testing as mt  # refused here
mt.ipython_in_subprocess("agg", {})
