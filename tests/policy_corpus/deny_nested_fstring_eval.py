# expect: deny eval-exec
print(f"{f'{eval("1+1")}'}")
