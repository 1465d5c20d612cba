# expect: allow
import os
OUT = "/out"
path = os.path.join(OUT, "summary.txt")
with open(os.path.join(OUT, "summary.txt"), "w") as fh:
    fh.write("done")
print(os.path.exists(path), os.path.basename(path))
