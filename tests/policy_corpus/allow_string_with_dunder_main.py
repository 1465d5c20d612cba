# expect: allow
label = "__main__ module and __init__.py files"
print(label.upper())
