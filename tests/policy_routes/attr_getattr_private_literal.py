# expect: deny private-attribute
import pandas as pd
t = getattr(pd, "_testing")  # refused here
