# expect: deny process
import os
os.spawnlp(os.P_WAIT, "ls", "ls")
