# expect: deny import-denied
import pandas.io.common as common
m = common.mmap.mmap(-1, 4096)  # refused here
