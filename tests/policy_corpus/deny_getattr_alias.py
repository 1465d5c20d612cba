# expect: deny process
import os
g = getattr
g(os, "popen")("id")
