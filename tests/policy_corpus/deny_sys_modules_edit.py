# expect: deny interpreter-state
import sys
sys.modules["json"] = None
