# expect: deny dunder-escape
f = lambda: type(1).__mro__[1].__subclasses__()
