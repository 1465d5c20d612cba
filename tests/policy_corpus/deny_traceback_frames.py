# expect: deny dunder-escape
try:
    1 / 0
except ZeroDivisionError as e:
    g = e.__traceback__.tb_frame.f_globals
