# expect: allow
import glob
import pandas as pd
frames = [pd.read_csv(p) for p in sorted(glob.glob("/data/*.csv"))]
df = pd.concat(frames, ignore_index=True)
print(df.shape)
