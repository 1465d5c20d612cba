# expect: deny reflection
breakpoint()
