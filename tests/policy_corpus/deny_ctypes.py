# expect: deny native-code
import ctypes
ctypes.CDLL(None).system(b"id")
