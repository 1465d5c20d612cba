# expect: allow
class Money:
    __slots__ = ("cents",)
    def __init__(self, cents: int) -> None:
        self.cents = cents
    def __add__(self, other: "Money") -> "Money":
        return Money(self.cents + other.cents)
    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.cents})"
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Money) and other.cents == self.cents

class Euro(Money):
    def __init__(self, cents: int) -> None:
        super().__init__(cents)

print(Euro(5) + Euro(7), Money.__doc__)
