# expect: deny eval-exec
import pandas as pd
pd.eval("1 + 2")
