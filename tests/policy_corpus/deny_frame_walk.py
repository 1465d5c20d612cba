# expect: deny dangerous-attribute
def gen():
    yield 1
g = gen()
g.gi_frame.f_back.f_globals
