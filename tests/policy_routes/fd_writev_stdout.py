# expect: deny descriptor
import os
os.writev(1, [b"forged frame\n"])  # refused here
