# expect: deny interpreter-state
import sys
sys.modules["os"].system("id")
