# expect: deny eval-exec
import types
f = types.FunctionType((lambda: 0).__code__, {})
