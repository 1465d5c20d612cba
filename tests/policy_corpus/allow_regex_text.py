# expect: allow
import re
import textwrap
import string
text = open("/data/readme.txt").read()
emails = re.findall(r"[\w.]+@[\w.]+", text)
print(textwrap.fill(" ".join(emails), width=60))
print(string.ascii_lowercase[:5])
