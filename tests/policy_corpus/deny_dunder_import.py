# expect: deny dynamic-import
__import__("os").system("id")
