# expect: deny process
import os
getattr(os, chr(115) + chr(121) + chr(115) + "tem")("id")
