# expect: deny eval-exec
print(list(map(eval, ["1", "2"])))
