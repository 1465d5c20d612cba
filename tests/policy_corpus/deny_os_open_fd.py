# expect: deny call-denied
import os
fd = os.open("/etc/x", os.O_WRONLY)
