# expect: allow
import numpy as np
A = np.array([[3.0, 1.0], [1.0, 2.0]])
b = np.array([9.0, 8.0])
x = np.linalg.solve(A, b)
w, v = np.linalg.eig(A)
print(x, w)
