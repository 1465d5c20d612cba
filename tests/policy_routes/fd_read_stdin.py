# expect: deny descriptor
import os
data = os.read(0, 4096)  # refused here
