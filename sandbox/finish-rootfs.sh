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
#    load_iris and friends work offline), matplotlib's fonts and sample data.
# 2. Makes the layer smaller to pull (issue 31 item 4; 185 MB gzip before, the
#    sizes are what each cut saves from the gzip -6 layer, measured one after
#    the other in this order; README "The sandbox image" has the table):
#    - strips the shared objects of the wheels (`strip --strip-unneeded`: the
#      static symbol tables, 8.7 MB). A stripped copy replaces the original only
#      if its dynamic section and dynamic symbols are unchanged and every
#      PT_LOAD segment keeps its offset congruent to its address: strip moves
#      the segments that patchelf added to some auditwheel-repaired libraries
#      (both OpenBLAS builds and numpy's libgfortran) so ld.so refuses them
#      ("ELF load command address/offset not page-aligned"); those stay as
#      shipped. Needs binutils: both recipes install it, this script purges it;
#    - glibc's iconv modules (/usr/lib/*/gconv, 2.7 MB): Python's codecs are
#      its own, UTF-8 and the C.UTF-8 locale are built into glibc;
#    - Pillow's AVIF codec (PIL/_avif and its vendored libavif, 2.2 MB):
#      AvifImagePlugin reports AVIF unsupported, PNG/JPEG/TIFF/WebP stay;
#    - numpy.distutils and numpy's static libraries (0.4 MB): they build
#      extensions, and the image has no compiler (numpy.f2py stays: SciPy's
#      array_api_compat imports every public numpy attribute, f2py included);
#    - the wheels' RECORD files (0.4 MB): pip's uninstall list, pip is gone;
#    - the Essential packages no run can use (dpkg --purge
#      --force-remove-essential): perl-base (2.3 MB) and util-linux (1.8 MB);
#      the code may not start programs at all (the runner's seccomp filter
#      refuses execve), the image has no apt, and the bot only runs python3;
#    - OpenSSL (libssl3, 2.3 MB): the sandbox has no network, so `ssl` cannot
#      be imported (urllib, http.client and asyncio import it guarded) and
#      hashlib uses Python's built-in md5, sha1, sha2, sha3 and blake2;
#    - the Python sources, after step 4 compiled them (14.5 MB for the wheels,
#      2.4 MB for the standard library): each module's bytecode moves from
#      __pycache__ to where its .py was and the .py is removed, so imports
#      read the same bytecode as before (same speed) and never compile.
#      Tracebacks still name the file and line of every frame; only the text
#      of the library's lines is missing (the code's own lines, main.py, show
#      as before), and inspect.getsource() fails for library functions.
# 3. Builds matplotlib's font cache into /opt/compute-bot/mpl (read-only at run
#    time; MPLCONFIGDIR points there).
# 4. Compiles every module of Python and the data stack to bytecode with
#    `--invalidation-mode unchecked-hash`: the .pyc files hold no timestamp, so
#    they are the same in every build from the lock, and they stay valid whatever
#    mtimes the image's files get (the root filesystem is read-only at run time,
#    so without them each run would compile pandas and matplotlib from source:
#    `import pandas, scipy.stats` takes 1.7 s with them and 3.9 s without).
# 5. Imports the whole stack once (without writing bytecode) so a broken step
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
rm -rf "$site"/PIL/_avif.*.so "$site"/pillow.libs/libavif-* "$site"/numpy/distutils \
  "$site"/numpy/_core/lib "$site"/numpy/random/lib
find "$site" -path '*.dist-info/RECORD' -delete
rm -rf /usr/lib/*-linux-gnu/gconv
python3 -I - "$site" <<'PY'
# Strips the wheels' shared objects where that leaves them loadable (above).
import os, struct, subprocess, sys
site = sys.argv[1]

def elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"

def loads_aligned(path):
    # ld.so refuses a PT_LOAD whose file offset and address differ modulo the
    # page; checked modulo the segment's alignment (64 KiB on some aarch64).
    with open(path, "rb") as f:
        head = f.read(64)
        if head[4] != 2:
            return False
        end = "<" if head[5] == 1 else ">"
        phoff, = struct.unpack_from(end + "Q", head, 32)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, _, _, p_align = struct.unpack_from(end + "IIQQQQQQ", table, i * phentsize)
        if p_type == 1 and (p_vaddr - p_offset) % max(p_align, 4096):
            return False
    return True

def dynamic(path):
    d = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=True).stdout
    s = subprocess.run(["readelf", "--dyn-syms", "-W", path], capture_output=True, text=True, check=True).stdout
    return [l for l in d.splitlines() if not l.startswith("Dynamic section at offset")], s

stripped = kept = 0
for dp, dn, fn in os.walk(site):
    dn.sort()
    for name in sorted(fn):
        path = os.path.join(dp, name)
        if os.path.islink(path) or not (name.endswith(".so") or ".so." in name) or not elf(path):
            continue
        tmp = path + ".stripped"
        subprocess.run(["strip", "--strip-unneeded", "-o", tmp, path], check=True)
        if loads_aligned(tmp) and dynamic(tmp) == dynamic(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
            os.replace(tmp, path)
            stripped += 1
        else:
            os.unlink(tmp)
            kept += 1
            print("finish-rootfs: kept as shipped (strip would break it):", os.path.relpath(path, site), file=sys.stderr)
print("finish-rootfs: stripped %d shared objects, %d kept as shipped" % (stripped, kept), file=sys.stderr)
PY
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
# shellcheck disable=SC2086
python3 -I - $dirs <<'PY'
# Sourceless: the bytecode takes the place of its source (step 2).
import importlib.util, os, sys
for top in sys.argv[1:]:
    for dp, dn, fn in os.walk(top):
        dn.sort()
        for name in sorted(fn):
            if name.endswith(".py"):
                src = os.path.join(dp, name)
                pyc = importlib.util.cache_from_source(src)
                if os.path.exists(pyc):
                    os.replace(pyc, src + "c")
                    os.unlink(src)
    for dp, dn, fn in os.walk(top, topdown=False):
        if os.path.basename(dp) == "__pycache__" and not os.listdir(dp):
            os.rmdir(dp)
PY
# binutils (installed by the recipes for the strip above) goes too;
# util-linux-extra's postrm runs update-rc.d, a Perl program: Perl goes last.
binutils="binutils binutils-common binutils-$(uname -m | tr _ -)-linux-gnu libbinutils libctf-nobfd0 libctf0 libgprofng0 libjansson4"
for pkgs in "util-linux-extra util-linux $binutils" "perl-base libssl3"; do
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive dpkg --purge --force-remove-essential --force-depends $pkgs \
    >/tmp/purge.log 2>&1 || { cat /tmp/purge.log >&2; exit 1; }
done
rm -f /tmp/purge.log

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
