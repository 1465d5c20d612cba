# expect: deny descriptor
import os
os.closerange(0, 1024)  # refused here
