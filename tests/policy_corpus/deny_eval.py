# expect: deny eval-exec
expr = "1 + 1"
print(eval(expr))
