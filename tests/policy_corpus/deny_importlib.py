# expect: deny dynamic-import
import importlib
importlib.import_module("subprocess").run(["id"])
