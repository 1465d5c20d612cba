# expect: deny dynamic-attribute
# string.Formatter().get_field walks "0.system" on its argument: getattr by string.
import os
import string
obj, _ = string.Formatter().get_field("0.system", [os], {})  # refused here
obj("id")
