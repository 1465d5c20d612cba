# expect: deny dynamic-attribute
import pandas as pd
print("{p._libs}".format_map({"p": pd}))  # refused here
