# expect: deny dunder-escape
def f():
    return 1
f.__code__ = (lambda: 2).__code__
