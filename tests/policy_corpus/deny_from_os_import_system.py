# expect: deny process
from os import system
system("id")
