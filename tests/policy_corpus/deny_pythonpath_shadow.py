# expect: deny code-file-write
import sys
with open("/tmp/statistics.py", "w") as fh:
    fh.write("import os\nos.system('id')\n")
sys.path.insert(0, "/tmp")
import statistics
