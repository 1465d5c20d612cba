# expect: deny process
import os
(f := os.system)("id")
