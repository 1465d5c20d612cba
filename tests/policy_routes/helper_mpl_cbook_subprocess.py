# expect: deny process
import matplotlib.cbook as cbook
cbook.subprocess.run(["id"])  # refused here
