import math, statistics, threading, time, datetime, decimal, fractions, random, re, itertools, collections
import numpy as np
a = np.random.default_rng(0).normal(size=(300, 300))
print(float(np.linalg.det(a @ a.T + np.eye(300))) > 0, float(np.linalg.inv(a).sum()))
u, s, vt = np.linalg.svd(a)
np.save("/tmp/a.npy", a)
b = np.load("/tmp/a.npy")
np.savetxt("/tmp/a.txt", b[:5])
print(np.loadtxt("/tmp/a.txt").shape, statistics.mean([1, 2, 3]), time.time() > 0)
t = threading.Thread(target=lambda: sum(range(10**5)))
t.start(); t.join()
print(datetime.datetime.now().year > 2000, decimal.Decimal("1.1") + 1, fractions.Fraction(1, 3))
