# expect: deny dynamic-attribute
import os
template = "{m.environ}"
print(template.format(m=os))  # refused here
