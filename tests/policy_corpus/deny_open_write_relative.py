# expect: deny open-write-outside-output
open("result.txt", "w").write("x")
