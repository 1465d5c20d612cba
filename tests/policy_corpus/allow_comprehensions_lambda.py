# expect: allow
data = [3, 1, 4, 1, 5, 9, 2, 6]
squares = {x: x * x for x in data}
evens = sorted({x for x in data if x % 2 == 0})
ranked = sorted(data, key=lambda v: (-v, v))
gen = sum(x for x in data if x > 2)
print(squares, evens, ranked, gen)
