# expect: deny eval-exec
𝘦𝘹𝘦𝘤("print(1)")
