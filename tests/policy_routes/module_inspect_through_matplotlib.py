# expect: deny reflection
import matplotlib.colors as colors
frame = colors.inspect.currentframe()  # refused here
