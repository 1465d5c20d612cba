# expect: allow
values = {"a": 1.23456, "b": 2.5}
width = 8
print(f"{'; '.join(f'{k}={v:{width}.{2}f}' for k, v in values.items())}")
print(f"{f'{f"{1 + 1}"}'}")
