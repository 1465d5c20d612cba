# expect: deny eval-exec
import pandas as pd
df = pd.DataFrame({"a": [1, 2]})
limit = 1
print(df.query("a > @limit"))
