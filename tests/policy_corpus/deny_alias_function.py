# expect: deny process
import os
s = os.system
s("id")
