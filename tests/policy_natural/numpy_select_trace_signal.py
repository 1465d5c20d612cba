import json
import numpy as np
from scipy import signal
import scipy.signal as sig

x = np.linspace(0, 10, 500)
y = np.sin(x) + 0.1 * np.cos(7 * x)
peaks, _ = signal.find_peaks(y, height=0.5)
b, a = sig.butter(3, 0.05)
smooth = sig.filtfilt(b, a, y)
grade = np.select([y > 0.5, y > 0], ["high", "mid"], default="low")
m = np.arange(9).reshape(3, 3)
print(json.dumps({"peaks": len(peaks), "trace": int(np.trace(m)), "linalg_trace": float(np.linalg.trace(m)), "high": int((grade == "high").sum()), "smooth_max": float(smooth.max())}))
