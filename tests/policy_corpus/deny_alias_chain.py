# expect: deny process
import os
a = os
b = a
b.popen("id").read()
