# expect: deny import-not-allowed
from sklearn.utils.parallel import ThreadpoolController  # refused here
info = ThreadpoolController().info()
