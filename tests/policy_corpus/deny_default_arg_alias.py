# expect: deny process
import os
def run(cmd, s=os.system):
    return s(cmd)
