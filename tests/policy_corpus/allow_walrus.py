# expect: allow
import re
lines = open("/data/app.log").read().splitlines()
errors = [m.group(1) for line in lines if (m := re.search(r"ERROR (\w+)", line))]
if (n := len(errors)) > 10:
    print(f"{n} errors")
