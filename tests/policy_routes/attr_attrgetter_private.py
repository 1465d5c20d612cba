# expect: deny private-attribute
import operator
import pandas as pd
lib = operator.attrgetter("_libs.lib")(pd)  # refused here
