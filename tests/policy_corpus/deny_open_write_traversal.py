# expect: deny open-write-outside-output
open("/out/../etc/passwd", "a").write("x")
