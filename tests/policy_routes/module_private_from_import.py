# expect: deny private-attribute
from numpy._core import multiarray  # refused here
