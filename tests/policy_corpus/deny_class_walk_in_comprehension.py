# expect: deny dunder-escape
names = [c.__name__ for c in object.__subclasses__()]
