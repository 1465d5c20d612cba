# expect: escalate import-not-allowed
# policy: escalate
import sympy
print(float(sympy.sqrt(2)))
