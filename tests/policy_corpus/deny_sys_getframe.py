# expect: deny interpreter-state
import sys
f = sys._getframe(0)
