# expect: deny dunder-escape
def f():
    pass
print(("{0.__glob" + "als__}").format(f))
