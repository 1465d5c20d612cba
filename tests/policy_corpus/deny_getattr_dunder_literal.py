# expect: deny dunder-escape
g = getattr(lambda: 0, "__glo" + "bals__")
