# expect: deny descriptor
import os
os.dup2(0, 1)  # refused here
