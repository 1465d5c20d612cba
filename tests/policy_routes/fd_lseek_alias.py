# expect: deny descriptor
from os import lseek as seek
seek(0, 0, 0)  # refused here
