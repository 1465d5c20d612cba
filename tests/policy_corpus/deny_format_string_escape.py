# expect: deny dunder-escape
template = "{0.__init__.__globals__[os]}"
print(template.format(object()))
