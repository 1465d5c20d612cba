# expect: allow
import random
random.seed(1)
sample = random.sample(range(100), 5)
print(sample, random.choice("abc"))
