# expect: escalate import-not-allowed
# policy: escalate
import scipy.stats
print(scipy.stats.norm.ppf(0.975))
