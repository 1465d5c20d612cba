# expect: deny eval-exec
e = eval
e("1")
