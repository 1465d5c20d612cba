# expect: deny open-write-outside-output
import matplotlib.pyplot as plt
plt.plot([1, 2])
plt.savefig("/home/runner/plot.png")
