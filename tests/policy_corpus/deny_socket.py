# expect: deny network
import socket
s = socket.create_connection(("example.com", 80))
