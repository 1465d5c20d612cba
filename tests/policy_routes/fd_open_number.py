# expect: deny descriptor
f = open(1, "wb")  # refused here
f.write(b"forged\n")
