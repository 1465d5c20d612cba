# expect: deny import-not-allowed
import scipy.stats as st
print(st.norm.cdf(1.0))
