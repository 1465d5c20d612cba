# expect: deny dynamic-attribute
import os
import functools
f = functools.reduce(getattr, ["path"], os)
