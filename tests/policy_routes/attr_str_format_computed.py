# expect: deny dynamic-attribute
import os
import json
spec = json.loads('"{0.system}"')
print(spec.format(os))  # refused here
