# expect: allow
with open("/data/input.txt") as fh:
    lines = [l.rstrip("\n") for l in fh]
with open("/data/input.txt", "rb") as fh:
    raw = fh.read()
print(len(lines), len(raw))
