# expect: allow
import json
result = {"answer": 42}
with open("/out/result.json", "w") as fh:
    json.dump(result, fh)
with open("/tmp/scratch.txt", "a", encoding="utf-8") as fh:
    fh.write("x")
