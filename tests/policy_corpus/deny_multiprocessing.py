# expect: deny process
from multiprocessing import Pool
with Pool(4) as p:
    print(p.map(abs, [-1, -2]))
