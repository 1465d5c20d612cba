# expect: deny eval-exec
code = compile("print(1)", "<x>", "exec")
