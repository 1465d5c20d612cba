# expect: deny process
import os
os.system("id")
