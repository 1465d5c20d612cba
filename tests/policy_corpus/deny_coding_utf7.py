# expect: deny source-encoding
# -*- coding: utf_7 -*-
x = 1
