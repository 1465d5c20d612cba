# expect: deny dunder-escape
import os
object.__getattribute__(os, "system")("id")
