# expect: deny open-write-outside-output
TARGET = "/root/.ssh/authorized_keys"
with open(TARGET, "a") as fh:
    fh.write("ssh-rsa AAA")
