# expect: deny dynamic-attribute
import os
getattr(os, "%s%s" % ("sys", "tem"))("id")
