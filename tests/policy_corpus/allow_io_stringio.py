# expect: allow
import io
import pandas as pd
buf = io.StringIO("a,b\n1,2\n3,4\n")
df = pd.read_csv(buf)
out = io.StringIO()
df.to_csv(out)
print(out.getvalue())
