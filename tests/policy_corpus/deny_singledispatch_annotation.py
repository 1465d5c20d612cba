# expect: deny eval-exec
import functools
import os

@functools.singledispatch
def show(x):
    return x

@show.register
def _(x: "os.system('id') or int"):
    return x
