# expect: deny eval-exec
getattr(__builtins__, "ev" + "al")("1")
