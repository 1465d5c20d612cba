# expect: deny import-not-allowed
from sympy import symbols, solve
x = symbols("x")
print(solve(x**2 - 2, x))
