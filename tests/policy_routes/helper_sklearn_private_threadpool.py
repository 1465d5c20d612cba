# expect: deny private-attribute
import sklearn.utils.fixes as fixes
c = fixes._get_threadpool_controller()  # refused here
