# expect: allow
import enum
import abc

class Color(enum.Enum):
    RED = 1
    GREEN = 2

class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self) -> float: ...

class Square(Shape):
    def __init__(self, s):
        self.s = s
    def area(self):
        return self.s ** 2

print(Color.RED.name, Square(3).area())
