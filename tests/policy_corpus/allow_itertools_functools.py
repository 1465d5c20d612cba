# expect: allow
import itertools
import functools
import operator
pairs = list(itertools.combinations(range(5), 2))
total = functools.reduce(operator.add, (a * b for a, b in pairs))
key = operator.itemgetter(1)
print(total, sorted(pairs, key=key)[:3])
