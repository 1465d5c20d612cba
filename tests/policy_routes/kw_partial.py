# expect: deny unsafe-deserialization
import functools
import numpy as np
load = functools.partial(np.load, **{"allow_pickle": True})  # refused here
