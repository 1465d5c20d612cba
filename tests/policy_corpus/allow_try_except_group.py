# expect: allow
def parse(values):
    errors = []
    for v in values:
        try:
            yield float(v)
        except ValueError as e:
            errors.append(e)
    if errors:
        raise ExceptionGroup("bad values", errors)

try:
    print(list(parse(["1", "x"])))
except* ValueError as eg:
    print(len(eg.exceptions))
