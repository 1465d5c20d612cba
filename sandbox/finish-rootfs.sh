#!/bin/sh
# The last step of both sandbox recipes (sandbox/build-debian.sh and
# sandbox/python/Dockerfile), run as root inside the image's root filesystem
# after pip installed sandbox/requirements.lock and was purged again:
#
# 1. Removes the packages' test suites (no sandbox run can use them).
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
assert duckdb.sql("select 42").fetchall() == [(42,)]
buf = io.BytesIO()
pandas.DataFrame({"a": [1, 2]}).to_parquet(buf)
assert pandas.read_parquet(io.BytesIO(buf.getvalue())).a.sum() == 3
'
