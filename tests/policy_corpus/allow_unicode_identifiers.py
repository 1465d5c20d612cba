# expect: allow
größe = 3
π = 3.14159
fläche = π * größe ** 2
print(f"{fläche:.2f}")
