# expect: deny dynamic-attribute
from string import Formatter  # refused here
import numpy as np
fmt = Formatter()
print(fmt.vformat("{0.ctypeslib}", [np], {}))
