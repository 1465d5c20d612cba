# expect: deny eval-exec
# policy: escalate
import sklearn
eval("1")
