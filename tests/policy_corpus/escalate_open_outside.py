# expect: escalate open-write-outside-output
# policy: escalate
open("report.txt", "w").write("x")
