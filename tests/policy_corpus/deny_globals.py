# expect: deny reflection
globals()["__builtins__"]
