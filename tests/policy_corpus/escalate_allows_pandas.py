# expect: allow
# policy: escalate
import pandas as pd
print(pd.DataFrame({"a": [1, 2]}).sum())
