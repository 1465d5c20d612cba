# expect: deny process
import os
os.execv("/bin/sh", ["sh"])
