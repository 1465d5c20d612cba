# expect: deny native-code
import numpy as np
lib = np.ctypeslib.load_library("libc", "/lib")
