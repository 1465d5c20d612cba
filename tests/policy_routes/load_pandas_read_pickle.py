# expect: deny unsafe-deserialization
import pandas as pd
df = pd.read_pickle("/data/frame.pkl")  # refused here
