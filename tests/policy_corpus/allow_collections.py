# expect: allow
from collections import Counter, defaultdict, deque
words = open("/data/text.txt", encoding="utf-8").read().lower().split()
counts = Counter(words)
by_len = defaultdict(list)
for w in counts:
    by_len[len(w)].append(w)
window = deque(maxlen=3)
print(counts.most_common(5), len(by_len))
