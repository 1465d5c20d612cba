# expect: deny dangerous-attribute
import matplotlib.cbook as cbook
cbook.subprocess.run(["id"])  # refused here
