# expect: deny syntax-error
def f(:
    pass
