# expect: deny relative-import
from . import helpers
from .utils import x
