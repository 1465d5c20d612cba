#!/bin/sh
# The last step of both sandbox recipes (sandbox/build-debian.sh and
# sandbox/python/Dockerfile), run as root inside the image's root filesystem
# after pip installed sandbox/requirements.lock and was purged again:
#
# 1. Prunes what no sandbox run can use (the image budget is 600 MB):
#    - the packages' test suites (`tests` folders: scipy 17 MiB, statsmodels
#      18 MiB with its reference results, sklearn 7 MiB, numpy, pandas, ...);
#    - build inputs and type stubs: Cython sources and declarations (*.pyx,
#      *.pxd, *.pxi), C/C++/Fortran sources and headers (*.c, *.cpp, *.h, *.hpp,
#      *.f, *.f90; numpy's include/ is for compiling extensions, which no run
#      does) and *.pyi stubs (read by type checkers, never by the interpreter);
#    - duplicated shared libraries: a wheel vendors its libraries under
#      <package>.libs with the content hash in the name, and numpy and scipy
#      both carry the same libgfortran and libquadmath; a file with the same
#      name and the same bytes in another *.libs folder becomes a hard link to
#      the first (in path order), so it is stored once and loaded as one file.
#    Not pruned: `testing` modules (numpy.testing is imported by the libraries),
#    statsmodels' and scikit-learn's bundled datasets (sm.datasets, sklearn's
#    load_iris and friends work offline), and the shared objects' symbols
#    (strip corrupts libraries that auditwheel patched with patchelf).
# 2. Builds matplotlib's font cache into /opt/compute-bot/mpl (read-only at run
#    time; MPLCONFIGDIR points there).
# 3. Compiles every module of Python and the data stack to bytecode with
#    `--invalidation-mode unchecked-hash`: the .pyc files hold no timestamp, so
#    they are the same in every build from the lock, and they stay valid whatever
#    mtimes the image's files get (the root filesystem is read-only at run time,
#    so without them each run would compile pandas and matplotlib from source).
# 4. Imports the whole stack once (without writing bytecode) so a broken step
#    fails the build, not the first run.
#
#   sh /tmp/finish-rootfs.sh
set -eu
site=/usr/local/lib/python3.11/dist-packages
export PYTHONDONTWRITEBYTECODE=1 PYTHONHASHSEED=0 LC_ALL=C.UTF-8

find "$site" -type d -name tests -prune -exec rm -rf {} +
find "$site" -type f \( -name '*.pyx' -o -name '*.pxd' -o -name '*.pxi' -o -name '*.c' -o -name '*.cpp' \
  -o -name '*.h' -o -name '*.hpp' -o -name '*.f' -o -name '*.f90' -o -name '*.pyi' \) -delete
find "$site" -depth -type d -empty -delete
python3 -I - "$site" <<'PY'
import hashlib, os, pathlib, sys
site = pathlib.Path(sys.argv[1])
first = {}
for lib in sorted(site.glob("*.libs/*")):
    if not lib.is_file() or lib.is_symlink():
        continue
    key = (lib.name, hashlib.sha256(lib.read_bytes()).hexdigest())
    if key in first:
        lib.unlink()
        os.link(first[key], lib)
    else:
        first[key] = lib
PY

mkdir -p /opt/compute-bot/mpl
MPLCONFIGDIR=/opt/compute-bot/mpl MPLBACKEND=Agg python3 -c "import matplotlib.pyplot, pandas"
chmod -R a+rX /opt/compute-bot

find / -xdev -type d -name __pycache__ -prune -exec rm -rf {} +
dirs=""
for d in /usr/lib/python3.11 /usr/lib/python3/dist-packages "$site"; do
  [ -d "$d" ] && dirs="$dirs $d"
done
# shellcheck disable=SC2086  # the directories have no spaces
python3 -m compileall -q --invalidation-mode unchecked-hash $dirs >/tmp/compileall.log 2>&1 || {
  cat /tmp/compileall.log >&2
  echo "error: compileall failed (above)" >&2
  exit 1
}
rm -f /tmp/compileall.log

MPLCONFIGDIR=/opt/compute-bot/mpl MPLBACKEND=Agg python3 -I -c '
import io, duckdb, fastparquet, matplotlib.pyplot, numpy, openpyxl, pandas
import scipy.optimize, scipy.sparse.linalg, scipy.stats, seaborn, statsmodels.api, statsmodels.formula.api
import sklearn.ensemble, sklearn.linear_model, sklearn.model_selection
assert duckdb.sql("select 42").fetchall() == [(42,)]
buf = io.BytesIO()
pandas.DataFrame({"a": [1, 2]}).to_parquet(buf)
assert pandas.read_parquet(io.BytesIO(buf.getvalue())).a.sum() == 3
x = numpy.arange(40.0)
df = pandas.DataFrame({"x": x, "y": 2 * x + numpy.sin(x), "c": (x % 2 == 0).astype(int)})
assert scipy.stats.ttest_ind(x[:20], x[20:]).pvalue < 0.001
assert abs(statsmodels.formula.api.ols("y ~ x", df).fit().params["x"] - 2) < 0.05
cv = sklearn.model_selection.cross_val_score(sklearn.linear_model.LogisticRegression(), df[["x"]], df.c, cv=2)
assert len(cv) == 2
seaborn.histplot(df, x="y")
'
