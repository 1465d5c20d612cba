# expect: deny dangerous-attribute
import os
import operator
operator.methodcaller("system", "id")(os)
