# expect: allow
msg = ("the quick brown fox "
       "jumps over the lazy dog")
print(msg.title(), "system".upper())
