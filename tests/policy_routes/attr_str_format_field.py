# expect: deny dynamic-attribute
# "{0.system}".format(os) reads os.system by its name inside the string.
import os
print("{0.system}".format(os))  # refused here
