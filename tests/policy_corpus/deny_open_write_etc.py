# expect: deny open-write-outside-output
with open("/etc/cron.d/x", "w") as fh:
    fh.write("* * * * * root id")
