# expect: deny call-denied
import os
os.remove("/data/input.csv")
