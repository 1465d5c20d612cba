# expect: deny private-attribute
from pandas.compat._optional import import_optional_dependency  # refused here
sp = import_optional_dependency("subprocess")
