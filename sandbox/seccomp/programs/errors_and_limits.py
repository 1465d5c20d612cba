import os, sys, signal, resource, socket, subprocess
# Failing things the code commonly tries: each must fail cleanly, not crash the runner.
for f in (lambda: open("/etc/hostname").read(), lambda: open("/nope"), lambda: os.mkdir("/x")):
    try:
        f()
    except OSError as e:
        print("err", e.errno)
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(("1.1.1.1", 80))
except OSError as e:
    print("net", e.errno)
try:
    socket.getaddrinfo("example.com", 80)
except OSError as e:
    print("dns", e)
print(subprocess.run(["true"]).returncode)
print(resource.getrlimit(resource.RLIMIT_NOFILE), os.getpid() > 0, sys.getrecursionlimit())
raise SystemExit(3)
