# expect: deny dunder-escape
def f():
    pass
f.__globals__["__builtins__"]["eval"]("1")
