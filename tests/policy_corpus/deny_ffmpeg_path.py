# expect: deny process
import matplotlib.pyplot as plt
plt.rcParams["animation.ffmpeg_path"] = "/bin/sh"
