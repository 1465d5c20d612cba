# expect: allow
import numpy as np
import pandas as pd
print(np.__version__, pd.__version__)
