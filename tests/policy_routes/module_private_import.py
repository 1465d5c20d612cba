# expect: deny private-attribute
import pandas._testing as tm  # refused here
tm.makeDataFrame()
