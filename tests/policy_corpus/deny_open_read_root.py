# expect: deny open-read-outside
with open("/root/.bashrc", "r") as fh:
    print(fh.read())
