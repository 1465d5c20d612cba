import json
from sklearn.datasets import load_iris, make_classification
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier, export_text
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.metrics import confusion_matrix, ConfusionMatrixDisplay
from sklearn.utils import resample, shuffle
import matplotlib.pyplot as plt

iris = load_iris(as_frame=True)
X, y = shuffle(iris.data, iris.target, random_state=0)
tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
rules = export_text(tree, feature_names=list(iris.feature_names))
cv = cross_validate(SVC(), X, y, cv=StratifiedKFold(5), scoring=["accuracy", "f1_macro"])
Xs, ys = make_classification(n_samples=200, n_features=5, random_state=0)
knn = KNeighborsClassifier(n_neighbors=5).fit(Xs, ys)
cm = confusion_matrix(ys, knn.predict(Xs))
ConfusionMatrixDisplay(cm).plot()
plt.savefig("/out/cm.png")
boot = resample(Xs, n_samples=50, random_state=0)
print(json.dumps({"rules_lines": len(rules.splitlines()), "acc": float(cv["test_accuracy"].mean()), "boot": len(boot)}))
