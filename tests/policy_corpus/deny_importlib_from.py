# expect: deny dynamic-import
from importlib import import_module
import_module("socket")
