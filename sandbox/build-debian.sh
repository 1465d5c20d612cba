#!/usr/bin/env bash
# Builds the compute-bot Python sandbox image without any image registry:
# a Debian root filesystem made by mmdebstrap from Debian packages, imported
# with `docker import`. This is the recipe used on air-gapped machines and CI.
#
#   sandbox/build-debian.sh [TAG]        (default TAG: compute-bot-sandbox:python)
#
# Needs: root (or fakeroot-capable mmdebstrap), mmdebstrap, docker.
# Install mmdebstrap on Debian/Ubuntu with: apt-get install -y mmdebstrap
set -euo pipefail

tag="${1:-compute-bot-sandbox:python}"
suite="${COMPUTE_BOT_SUITE:-bookworm}"
mirror="${COMPUTE_BOT_MIRROR:-http://deb.debian.org/debian}"

if ! command -v mmdebstrap >/dev/null; then
  echo "error: mmdebstrap is not installed; run: apt-get install -y mmdebstrap" >&2
  exit 2
fi

work="$(mktemp -d /tmp/compute-bot-rootfs.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/root"

mmdebstrap --variant=essential --mode=root \
  --aptopt='APT::Install-Recommends "false"' \
  --include=python3,python3-pandas,python3-numpy,python3-matplotlib,tzdata \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='echo "sandbox:x:10001:10001:compute-bot sandbox:/tmp:/usr/sbin/nologin" >> "$1/etc/passwd"' \
  --customize-hook='echo "sandbox:x:10001:" >> "$1/etc/group"' \
  --customize-hook='printf "root:*:19000:0:99999:7:::\nsandbox:!:19000:0:99999:7:::\n" > "$1/etc/shadow" && chmod 0600 "$1/etc/shadow"' \
  --customize-hook='mkdir -p "$1/data" "$1/out" "$1/opt/compute-bot/mpl"' \
  --customize-hook='chroot "$1" env MPLCONFIGDIR=/opt/compute-bot/mpl MPLBACKEND=Agg python3 -c "import matplotlib.pyplot"' \
  --customize-hook='chmod -R a+rX "$1/opt/compute-bot"' \
  --customize-hook='rm -rf "$1/var/cache/apt"/* "$1/var/lib/apt/lists"/* "$1/var/log"/*' \
  "$suite" "$root" "$mirror"

versions="$(chroot "$root" python3 -c 'import sys, pandas, numpy, matplotlib; print(sys.version.split()[0], pandas.__version__, numpy.__version__, matplotlib.__version__)')"
read -r py pd np mpl <<<"$versions"

tar -C "$root" -c . | docker import \
  --change 'USER 10001:10001' \
  --change 'WORKDIR /tmp' \
  --change 'ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 MPLBACKEND=Agg HOME=/tmp LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  --change "LABEL org.compute-bot.sandbox=python org.compute-bot.recipe=debian-$suite org.compute-bot.python=$py org.compute-bot.pandas=$pd org.compute-bot.numpy=$np org.compute-bot.matplotlib=$mpl" \
  - "$tag" >/dev/null

echo "built $tag (python $py, pandas $pd, numpy $np, matplotlib $mpl) from Debian $suite"
