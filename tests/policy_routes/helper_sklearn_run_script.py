# expect: deny private-attribute
from sklearn.utils._testing import assert_run_python_script_without_output  # refused here
assert_run_python_script_without_output("import os; os.system('id')")
