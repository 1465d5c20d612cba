# expect: deny process
from matplotlib.testing import subprocess_run_for_testing  # refused here
subprocess_run_for_testing(["id"], capture_output=True)
