# expect: deny process
import os
pid = os.fork()
