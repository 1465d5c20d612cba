# expect: deny dangerous-attribute
import os
[m for m in [os]][0].system("id")
