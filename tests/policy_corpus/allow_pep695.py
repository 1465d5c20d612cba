# expect: allow
type Vector = list[float]
type Pair[T] = tuple[T, T]

def first[T](items: list[T]) -> T:
    return items[0]

class Stack[T]:
    def __init__(self) -> None:
        self.items: list[T] = []
    def push(self, item: T) -> None:
        self.items.append(item)

v: Vector = [1.0, 2.0]
print(first(v))
