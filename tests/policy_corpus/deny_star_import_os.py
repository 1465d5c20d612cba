# expect: deny star-import
from os import *
system("id")
