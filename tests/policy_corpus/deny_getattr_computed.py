# expect: deny dynamic-attribute
import os
name = input_name()
getattr(os, name)("id")
