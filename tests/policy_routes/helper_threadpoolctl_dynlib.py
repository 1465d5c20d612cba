# expect: deny dangerous-attribute
from sklearn.utils.parallel import ThreadpoolController
controller = ThreadpoolController()
handle = controller.lib_controllers[0].dynlib  # refused here
