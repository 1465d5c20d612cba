# expect: deny dangerous-attribute
import numpy.lib.format as fmt
obj = fmt.pickle.loads(b"")  # refused here
