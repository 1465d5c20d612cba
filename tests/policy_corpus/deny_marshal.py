# expect: deny unsafe-deserialization
import marshal
code = marshal.loads(b"...")
