# expect: deny dangerous-attribute
import pandas as pd
pd.io.common.os.system("id")
