# expect: allow
import numpy as np
rng = np.random.default_rng(42)
x = rng.normal(loc=10, scale=2, size=10_000)
ci = np.percentile(x, [2.5, 97.5])
print(f"mean={x.mean():.3f} sd={x.std(ddof=1):.3f} ci={ci}")
