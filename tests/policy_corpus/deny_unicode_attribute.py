# expect: deny process
import os
os.ｓｙｓｔｅｍ("id")
