# expect: deny descriptor
import os
os.close(3)  # refused here
