# expect: deny eval-exec
ｅｖａｌ("1 + 1")
