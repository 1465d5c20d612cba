# expect: deny private-attribute
import pandas as pd
sp = pd.compat._optional.import_optional_dependency("subprocess")  # refused here
