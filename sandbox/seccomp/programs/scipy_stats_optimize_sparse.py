# SciPy as analyses use it: tests and p-values (scipy.stats), fitting and
# minimising (scipy.optimize), sparse linear algebra, interpolation and
# integration, FFT; SciPy loads its own OpenBLAS (scipy.libs) and Fortran runtime.
import numpy as np
from scipy import fft, integrate, interpolate, linalg, optimize, sparse, stats
from scipy.sparse import linalg as spla
rng = np.random.default_rng(0)
a, b = rng.normal(10, 2, 200), rng.normal(10.5, 2, 200)
print(stats.ttest_ind(a, b), stats.ttest_rel(a, b), stats.mannwhitneyu(a, b))
print(stats.shapiro(a), stats.normaltest(a), stats.kstest(a, "norm", args=(10, 2)))
print(stats.pearsonr(a, b), stats.spearmanr(a, b), stats.kendalltau(a[:50], b[:50]))
print(stats.chi2_contingency([[10, 20], [30, 25]]), stats.f_oneway(a, b, a + 1))
print(stats.linregress(a, b), stats.describe(a), stats.bootstrap((a,), np.mean, n_resamples=200, random_state=0).confidence_interval)
print(stats.norm.ppf(0.975), stats.t.sf(2.1, 30), stats.gaussian_kde(a)(10.0))
x = np.linspace(0, 4, 60)
y = 2.5 * np.exp(-1.3 * x) + 0.1 + rng.normal(0, 0.01, 60)
print(optimize.curve_fit(lambda x, p, q, r: p * np.exp(-q * x) + r, x, y, p0=(1, 1, 0))[0])
print(optimize.minimize(optimize.rosen, [1.3, 0.7, 0.8], method="BFGS").x)
print(optimize.linprog([-1, -2], A_ub=[[1, 1], [1, -1]], b_ub=[4, 1], method="highs").x)
print(optimize.brentq(lambda t: t**3 - 2, 0, 2), optimize.least_squares(lambda p: p - 3, [0.0]).x)
A = sparse.diags([-1, 2, -1], [-1, 0, 1], shape=(2000, 2000), format="csc")
rhs = np.ones(2000)
print(spla.spsolve(A, rhs).max(), spla.cg(A, rhs, maxiter=50)[1], spla.eigsh(A, k=3, which="LM")[0])
print(spla.splu(A).solve(rhs)[:3], sparse.random(100, 100, density=0.05, random_state=0).nnz)
M = rng.normal(size=(120, 120))
print(linalg.lu_factor(M)[0][0, 0], linalg.expm(M / 100)[0, 0], linalg.eigh(M @ M.T)[0][0])
print(interpolate.interp1d(x, y)(1.5), interpolate.CubicSpline(x, y)(2.0), integrate.quad(np.sin, 0, np.pi))
print(integrate.solve_ivp(lambda t, z: -z, (0, 1), [1.0]).y[0, -1], abs(fft.fft(y)).max())
