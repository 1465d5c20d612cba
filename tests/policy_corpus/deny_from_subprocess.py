# expect: deny process
from subprocess import run as r
r(["id"])
