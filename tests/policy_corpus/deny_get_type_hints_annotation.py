# expect: deny eval-exec
import typing

def f(x: list["print(1) or int"]) -> None:
    pass

typing.get_type_hints(f)
