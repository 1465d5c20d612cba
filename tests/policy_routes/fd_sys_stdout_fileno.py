# expect: deny descriptor
import os
import sys
os.write(sys.stdout.fileno(), b"x\n")  # refused here
