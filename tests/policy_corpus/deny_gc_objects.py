# expect: deny reflection
import gc
objs = gc.get_objects()
