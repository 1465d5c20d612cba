# expect: deny private-attribute
import scipy
t = scipy._lib._testutils  # refused here
