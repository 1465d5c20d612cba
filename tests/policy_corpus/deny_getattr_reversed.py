# expect: deny process
import os
getattr(os, "metsys"[::-1])("id")
