# expect: deny network
import requests
requests.get("http://example.com")
