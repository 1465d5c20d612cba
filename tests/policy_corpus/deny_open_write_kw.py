# expect: deny open-write-outside-output
open(file="/home/user/.bashrc", mode="w").write("x")
