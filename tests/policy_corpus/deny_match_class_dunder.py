# expect: deny dunder-escape
def f():
    pass
match f:
    case object(__globals__=g):
        print(g)
