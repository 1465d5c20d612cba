# expect: deny process
import os
getattr(os, "sys" + "tem")("id")
