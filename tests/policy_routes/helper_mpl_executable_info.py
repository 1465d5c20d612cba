# expect: deny private-attribute
import matplotlib
info = matplotlib._get_executable_info("gs")  # refused here
