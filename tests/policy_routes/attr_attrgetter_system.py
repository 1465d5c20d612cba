# expect: deny dangerous-attribute
import operator
import os
run = operator.attrgetter("system")(os)  # refused here
run("id")
