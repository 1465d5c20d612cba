# expect: deny import-not-allowed
import shutil
shutil.rmtree("/tmp/x")
