# expect: deny import-not-allowed
from scipy.stats import norm, ttest_ind
print(norm.cdf(1.0))
