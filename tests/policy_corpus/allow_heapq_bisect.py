# expect: allow
import heapq
import bisect
nums = [5, 1, 8, 3, 9, 2]
print(heapq.nlargest(3, nums))
s = sorted(nums)
print(bisect.bisect_left(s, 4))
