# expect: allow
from dataclasses import dataclass

@dataclass
class Point:
    x: float
    y: float

def where(p):
    match p:
        case Point(x=0, y=0):
            return "origin"
        case Point(x=x, y=y) if x == y:
            return "diagonal"
        case _:
            return "somewhere"
print(where(Point(1, 1)))
