# expect: allow
import os
files = [f for f in os.listdir("/data") if f.endswith(".csv")]
os.makedirs("/out/plots", exist_ok=True)
print(files, os.path.getsize("/data/a.csv") if os.path.exists("/data/a.csv") else 0)
