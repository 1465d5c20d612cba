# expect: deny open-write-outside-output
import pandas as pd
df = pd.DataFrame({"a": [1]})
df.to_csv("/etc/passwd", index=False)
