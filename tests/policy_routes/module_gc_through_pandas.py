# expect: deny reflection
import pandas.core.generic as generic
objs = generic.gc.get_objects()  # refused here
