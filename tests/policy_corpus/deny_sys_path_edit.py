# expect: deny interpreter-state
import sys
sys.path.insert(0, "/tmp/mods")
