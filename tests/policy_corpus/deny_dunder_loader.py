# expect: deny dunder-escape
__loader__.load_module("os")
