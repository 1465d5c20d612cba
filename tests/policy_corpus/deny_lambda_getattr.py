# expect: deny dynamic-attribute
import os
(lambda g: g(os, "system"))(getattr)("id")
