# expect: deny dunder-escape
object_cls = "".__class__.__mro__[-1]
