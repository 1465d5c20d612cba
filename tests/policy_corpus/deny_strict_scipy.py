# expect: deny import-not-allowed
# policy: strict
from scipy import stats
print(stats.norm.cdf(1.0))
