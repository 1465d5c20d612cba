# expect: deny reflection
x = locals()
