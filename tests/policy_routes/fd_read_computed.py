# expect: deny descriptor
import os
for fd in range(3, 10):
    os.read(fd, 100)  # refused here
