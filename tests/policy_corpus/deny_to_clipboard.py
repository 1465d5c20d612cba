# expect: deny dangerous-attribute
import pandas as pd
pd.DataFrame({"a": [1]}).to_clipboard()
