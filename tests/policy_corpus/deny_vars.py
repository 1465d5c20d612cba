# expect: deny reflection
import os
vars(os)["system"]("id")
