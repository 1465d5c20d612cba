import json
import matplotlib.pyplot as plt
import pandas as pd
from sklearn.cluster import KMeans, DBSCAN
from sklearn.decomposition import PCA
from sklearn.metrics import silhouette_score
from sklearn.preprocessing import StandardScaler

df = pd.read_csv("/data/shoppers.csv")
X = StandardScaler().fit_transform(df.select_dtypes("number"))
best = max(range(2, 7), key=lambda k: silhouette_score(X, KMeans(n_clusters=k, n_init=10, random_state=0).fit_predict(X)))
labels = KMeans(n_clusters=best, n_init=10, random_state=0).fit_predict(X)
pcs = PCA(n_components=2).fit(X)
xy = pcs.transform(X)
plt.scatter(xy[:, 0], xy[:, 1], c=labels, s=8, cmap="viridis")
plt.savefig("/out/clusters.png")
noise = int((DBSCAN(eps=0.8).fit_predict(X) == -1).sum())
print(json.dumps({"k": best, "explained": [float(v) for v in pcs.explained_variance_ratio_], "noise": noise}))
