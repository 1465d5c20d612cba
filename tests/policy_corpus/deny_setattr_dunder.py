# expect: deny dunder-escape
def f():
    return 1
setattr(f, "__code__", None)
