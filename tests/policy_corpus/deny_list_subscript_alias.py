# expect: deny process
import os
[os.system][0]("id")
