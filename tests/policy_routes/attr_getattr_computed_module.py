# expect: deny dynamic-attribute
import numpy as np
name = "".join(chr(c) for c in [99, 116, 121, 112, 101, 115, 108, 105, 98])
getattr(np, name)  # refused here
