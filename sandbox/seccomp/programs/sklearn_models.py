# scikit-learn as analyses use it: split, scale, fit, predict, metrics,
# cross-validation and a grid search, with n_jobs=1 and n_jobs=-1 (joblib;
# JOBLIB_MULTIPROCESSING=0 keeps it in one process), threadpoolctl (ctypes)
# and OpenMP (the random forest, k-means).
import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.decomposition import PCA
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import accuracy_score, classification_report, mean_squared_error, r2_score, roc_auc_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn import show_versions
X, y = make_classification(n_samples=600, n_features=12, random_state=0)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=42)
for n_jobs in (1, -1):
    rf = RandomForestClassifier(n_estimators=40, random_state=0, n_jobs=n_jobs).fit(Xtr, ytr)
    print(n_jobs, accuracy_score(yte, rf.predict(Xte)), roc_auc_score(yte, rf.predict_proba(Xte)[:, 1]))
    print(cross_val_score(LogisticRegression(max_iter=500), X, y, cv=KFold(5, shuffle=True, random_state=0), n_jobs=n_jobs).mean())
    grid = GridSearchCV(make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
                        {"logisticregression__C": [0.1, 1.0]}, cv=3, n_jobs=n_jobs).fit(Xtr, ytr)
    print(grid.best_params_)
print(classification_report(yte, rf.predict(Xte)))
Xr, yr = make_regression(n_samples=400, n_features=8, noise=5, random_state=0)
print(r2_score(yr, LinearRegression().fit(Xr, yr).predict(Xr)))
print(mean_squared_error(yr, GradientBoostingRegressor(random_state=0).fit(Xr, yr).predict(Xr)))
iris = load_iris()
print(KMeans(n_clusters=3, n_init=4, random_state=0).fit(iris.data).inertia_, PCA(2).fit(iris.data).explained_variance_ratio_)
print(OneHotEncoder().fit_transform(np.array([["a"], ["b"], ["a"]])).toarray().sum())
show_versions()  # threadpoolctl: ctypes, dl_iterate_phdr over the loaded BLAS and OpenMP
