# expect: deny dynamic-import
m = __import__("o" + "s")
m.system("id")
