# expect: allow
import sys
sys.stdout.write("result: 1\n")
print(sys.version_info >= (3, 10), file=sys.stderr)
