# expect: deny import-not-allowed
# policy: strict
import pandas as pd
