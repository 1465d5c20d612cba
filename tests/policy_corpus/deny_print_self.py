# expect: deny dunder-escape
print.__self__.__import__("os")
