# expect: deny unsafe-deserialization
import numpy.lib.format as fmt
obj = fmt.pickle.loads(b"")  # refused here
