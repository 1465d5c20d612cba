# expect: deny dunder-escape
x = (1).__reduce_ex__(2)
