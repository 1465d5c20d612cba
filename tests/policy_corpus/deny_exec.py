# expect: deny eval-exec
exec("import os; os.system('id')")
