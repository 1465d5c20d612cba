# expect: deny process
import os
f = getattr(os, "".join(["sy", "st", "em"]))
f("id")
