# expect: allow
def classify(point):
    match point:
        case (0, 0):
            return "origin"
        case (x, 0):
            return f"x-axis at {x}"
        case {"x": x, "y": y}:
            return f"dict {x},{y}"
        case [x, y, *rest]:
            return f"seq {x},{y} +{len(rest)}"
        case _:
            return "other"
print(classify((0, 0)), classify({"x": 1, "y": 2}))
