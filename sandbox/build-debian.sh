#!/usr/bin/env bash
# Builds the compute-bot Python sandbox image without any image registry: a
# Debian bookworm root filesystem made by mmdebstrap (python3 3.11 from Debian;
# merged /usr by mmdebstrap's hook, so neither usrmerge nor perl is installed),
# the Python packages of sandbox/requirements.lock installed by pip inside it
# (`--require-hashes --no-deps`, from PyPI), pip removed again, finished by
# sandbox/finish-rootfs.sh (test suites, build sources, type stubs and duplicated
# shared libraries pruned, shared objects stripped, packages no run can use
# purged (binutils, installed here for the strip, with them), matplotlib's font
# cache, bytecode for everything without timestamps in place of the sources), then
# `docker import` of a tar sorted by name with every mtime clamped to
# SOURCE_DATE_EPOCH, so two builds from the same lock (and the same Debian
# mirror state) give the same layer. sandbox/python/Dockerfile builds the same
# thing where images can be pulled. JOBLIB_MULTIPROCESSING=0: joblib (under
# scikit-learn's n_jobs) runs every task in the one process, whatever n_jobs
# says; worker processes would each load the stack again under the one memory
# limit, outside the runner's audit hooks (the bot sets it too: BASE_ENV).
#
#   sandbox/build-debian.sh [TAG]        (default TAG: compute-bot-sandbox:python)
#   sandbox/build-debian.sh --recipe-sha256   (prints the recipe label it would write)
#
# Needs: root, mmdebstrap (apt-get install -y mmdebstrap), docker, and the
# pip on this machine; the Debian and PyPI package registries.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# The recipe label: this script, the finishing step and the lock.
recipe_sha="$(cat "$here/build-debian.sh" "$here/finish-rootfs.sh" "$here/requirements.lock" | sha256sum | cut -d' ' -f1)"
if [ "${1:-}" = "--recipe-sha256" ]; then
  echo "$recipe_sha"
  exit 0
fi
tag="${1:-compute-bot-sandbox:python}"
suite="${COMPUTE_BOT_SUITE:-bookworm}"
mirror="${COMPUTE_BOT_MIRROR:-http://deb.debian.org/debian}"
lock="$here/requirements.lock"
finish="$here/finish-rootfs.sh"
# Every mtime in the image is clamped to this (and mmdebstrap makes its own
# output reproducible with it); a fixed date: mtimes carry nothing here.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1767225600}"   # 2026-01-01T00:00:00Z

if ! command -v mmdebstrap >/dev/null; then
  echo "error: mmdebstrap is not installed; run: apt-get install -y mmdebstrap" >&2
  exit 2
fi
[ -f "$lock" ] || { echo "error: $lock is missing; run sandbox/lock.sh" >&2; exit 2; }
lock_sha="$(sha256sum "$lock" | cut -d' ' -f1)"

work="$(mktemp -d /tmp/compute-bot-rootfs.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/root"

# The wheels of the lock are fetched here by pip (hashes checked) and installed by
# Debian's pip inside the root filesystem from that directory (hashes checked again,
# no index); python3-pip is purged afterwards.
arch="$(uname -m)"
wheels="$work/wheels"
pip_cmd=(pip3)
command -v pip3 >/dev/null || pip_cmd=(python3 -m pip)
"${pip_cmd[@]}" download --quiet --disable-pip-version-check --no-deps --require-hashes \
  --only-binary=:all: --implementation cp --abi cp311 --python-version 3.11 \
  --platform "manylinux2014_$arch" --platform "manylinux_2_28_$arch" \
  -r "$lock" -d "$wheels"

mmdebstrap --variant=essential --mode=root \
  --aptopt='APT::Install-Recommends "false"' \
  --include=python3,python3-pip,libstdc++6,tzdata,binutils \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook="cp '$lock' \"\$1/tmp/requirements.lock\" && cp -r '$wheels' \"\$1/tmp/wheels\" && cp '$finish' \"\$1/tmp/finish-rootfs.sh\"" \
  --customize-hook='chroot "$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin python3 -m pip install --no-cache-dir --break-system-packages --disable-pip-version-check --no-compile --require-hashes --no-deps --only-binary=:all: --no-index --find-links /tmp/wheels -r /tmp/requirements.lock' \
  --customize-hook='chroot "$1" env DEBIAN_FRONTEND=noninteractive dpkg --purge python3-pip python3-wheel python3-setuptools python3-pkg-resources python3-distutils python3-lib2to3 ca-certificates openssl' \
  --customize-hook='echo "sandbox:x:10001:10001:compute-bot sandbox:/tmp:/usr/sbin/nologin" >> "$1/etc/passwd"' \
  --customize-hook='echo "sandbox:x:10001:" >> "$1/etc/group"' \
  --customize-hook='printf "root:*:19000:0:99999:7:::\nsandbox:!:19000:0:99999:7:::\n" > "$1/etc/shadow" && chmod 0600 "$1/etc/shadow"' \
  --customize-hook='mkdir -p "$1/data" "$1/out"' \
  --customize-hook='chroot "$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH" sh /tmp/finish-rootfs.sh' \
  --customize-hook='rm -rf "$1/tmp/requirements.lock" "$1/tmp/wheels" "$1/tmp/finish-rootfs.sh" "$1/root/.cache" "$1/root/.duckdb"' \
  --customize-hook='rm -rf "$1/var/cache/apt"/* "$1/var/lib/apt/lists"/* "$1/var/log"/* "$1/var/cache/ldconfig/aux-cache" "$1/var/lib/dpkg"/*-old' \
  --customize-hook=': > "$1/etc/resolv.conf" && : > "$1/etc/hostname"' \
  "$suite" "$root" "$mirror"

# The versions, read with the font cache of the image (seaborn imports pyplot):
# nothing is written into the root by this step (a cache under /root would
# differ from build to build: matplotlib orders fonts as the disk lists them).
versions="$(chroot "$root" env -i PATH=/usr/bin:/bin MPLCONFIGDIR=/opt/compute-bot/mpl MPLBACKEND=Agg python3 -I -B -c 'import sys, pandas, numpy, matplotlib, duckdb, fastparquet, openpyxl, scipy, statsmodels, sklearn, seaborn; print(sys.version.split()[0], pandas.__version__, numpy.__version__, matplotlib.__version__, duckdb.__version__, fastparquet.__version__, openpyxl.__version__, scipy.__version__, statsmodels.__version__, sklearn.__version__, seaborn.__version__)')"
read -r py pd np mpl ddb fp xl sp sm skl sns <<<"$versions"
[ ! -e "$root/root/.cache" ] || { echo "error: reading the versions wrote $root/root/.cache" >&2; exit 1; }

# A layer that depends only on the files: sorted names, numeric owners, mtimes
# clamped to SOURCE_DATE_EPOCH.
tar -C "$root" --sort=name --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime -c . | docker import \
  --change 'USER 10001:10001' \
  --change 'WORKDIR /tmp' \
  --change 'ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 MPLBACKEND=Agg HOME=/tmp LANG=C.UTF-8 JOBLIB_MULTIPROCESSING=0' \
  --change 'CMD ["python3"]' \
  --change "LABEL org.compute-bot.sandbox=python org.compute-bot.recipe=debian-$suite org.compute-bot.python=$py org.compute-bot.pandas=$pd org.compute-bot.numpy=$np org.compute-bot.matplotlib=$mpl org.compute-bot.duckdb=$ddb org.compute-bot.fastparquet=$fp org.compute-bot.openpyxl=$xl org.compute-bot.scipy=$sp org.compute-bot.statsmodels=$sm org.compute-bot.sklearn=$skl org.compute-bot.seaborn=$sns org.compute-bot.lock-sha256=$lock_sha org.compute-bot.recipe-sha256=$recipe_sha" \
  - "$tag" >/dev/null

size="$(docker image inspect --format '{{.Size}}' "$tag")"
layer="$(docker image inspect --format '{{index .RootFS.Layers 0}}' "$tag")"
# What a registry serves: the same layer with gzip -6, as `docker push` sends it.
gz="$(tar -C "$root" --sort=name --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime -c . | gzip -6 | wc -c)"
echo "built $tag (python $py, pandas $pd, numpy $np, matplotlib $mpl, duckdb $ddb, fastparquet $fp, openpyxl $xl, scipy $sp, statsmodels $sm, scikit-learn $skl, seaborn $sns) from Debian $suite; size $((size / 1000000)) MB uncompressed (budget 600 MB), $(awk -v b="$gz" 'BEGIN { printf "%.1f", b / 1e6 }') MB with gzip (budget 150 MB); layer $layer"
if [ "$size" -gt 600000000 ] || [ "$gz" -gt 150000000 ]; then
  echo "warning: $tag is over its size budget (600 MB uncompressed, 150 MB with gzip): every fresh runner pulls it; see README \"Smaller to pull\"" >&2
fi
