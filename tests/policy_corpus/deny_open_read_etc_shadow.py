# expect: deny open-read-outside
print(open("/etc/shadow").read())
