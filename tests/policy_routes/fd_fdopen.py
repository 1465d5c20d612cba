# expect: deny descriptor
import os
out = os.fdopen(2, "w")  # refused here
