# expect: deny process
import subprocess
print(subprocess.check_output(["ls", "/"]))
