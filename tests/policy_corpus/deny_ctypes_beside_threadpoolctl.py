# expect: deny native-code
# threadpoolctl (loaded by scikit-learn) uses ctypes; the code itself may not.
import sklearn
import ctypes
libc = ctypes.CDLL("libc.so.6")
print(libc.getpid())
