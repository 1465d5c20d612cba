# expect: deny network
from urllib.request import urlopen
print(urlopen("http://example.com").read())
