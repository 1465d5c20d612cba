# expect: deny dunder-escape
__builtins__.open("/etc/passwd")
