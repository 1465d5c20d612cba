# expect: deny dunder-escape
import operator
operator.attrgetter("__globals__")(lambda: 0)
