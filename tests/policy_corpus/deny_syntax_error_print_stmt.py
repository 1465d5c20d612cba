# expect: deny syntax-error
print "hello"
