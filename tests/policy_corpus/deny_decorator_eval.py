# expect: deny eval-exec
@eval
def f():
    pass
