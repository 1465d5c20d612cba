# expect: deny process
# policy: escalate
import subprocess
subprocess.run(["id"])
