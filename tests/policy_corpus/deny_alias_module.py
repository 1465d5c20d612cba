# expect: deny process
import os as o
o.system("id")
