# expect: deny eval-exec
import timeit
timeit.timeit("__import__('os').system('id')", number=1)
