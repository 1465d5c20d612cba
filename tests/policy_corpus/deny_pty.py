# expect: deny process
import pty
pty.spawn("/bin/sh")
