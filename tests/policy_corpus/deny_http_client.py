# expect: deny network
import http.client
conn = http.client.HTTPSConnection("example.com")
