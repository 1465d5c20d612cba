from sklearn.linear_model import LogisticRegression
from sklearn.datasets import make_classification
import json
X, y = make_classification(n_samples=2000, random_state=0)
m = LogisticRegression(max_iter=500).fit(X, y)
print(json.dumps({"acc": float(m.score(X, y))}))
