#!/usr/bin/env bash
# Builds the TEST-ONLY boundary image TAG (scripts/boundary-suite names it) on
# the sandbox image BASE as it is now, when TAG is missing or stale; otherwise
# says it is up to date. Idempotent, no TTY, no image registry:
#
# 1. the wheels of sandbox/boundary/requirements.lock are downloaded by this
#    host's pip (hashes checked) into a temporary directory, and installed by
#    the same pip into site/ for CPython 3.11 manylinux (hashes checked again,
#    no index, no bytecode, no scripts);
# 2. `docker build --pull=false` (the classic builder: Docker 20.10 has no
#    BuildKit here) FROM the base's image id, so the base is the local image
#    and cannot move mid-build; sandbox/boundary/Dockerfile copies site/ in and
#    compiles it.
#
# Labels: org.compute-bot.boundary-lock-sha256 (the lock),
# org.compute-bot.boundary-recipe-sha256 (this script, the Dockerfile, the lock)
# and org.compute-bot.boundary-base-id (the base's id). TAG is stale when the
# recipe or the base's id differs (the sandbox image was rebuilt).
#
#   sandbox/boundary/build.sh TAG BASE    (scripts/boundary-suite names both)
#
# Needs: docker, pip (any Python) and PyPI. Exit 2 when the base is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tag="${1:?usage: sandbox/boundary/build.sh TAG BASE}"
base="${2:?usage: sandbox/boundary/build.sh TAG BASE}"
lock="$here/requirements.lock"
recipe_sha="$(cat "$here/build.sh" "$here/Dockerfile" "$lock" | sha256sum | cut -d' ' -f1)"
lock_sha="$(sha256sum "$lock" | cut -d' ' -f1)"

base_id="$(docker image inspect --format '{{.Id}}' "$base" 2>/dev/null)" || {
  echo "error: the sandbox image $base is missing; build it first (scripts/ensure-sandbox-image)" >&2
  exit 2
}
label() { docker image inspect --format "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }
if [ "$(label "$tag" org.compute-bot.boundary-recipe-sha256)" = "$recipe_sha" ] &&
   [ "$(label "$tag" org.compute-bot.boundary-base-id)" = "$base_id" ]; then
  echo "$tag is up to date (base $base ${base_id:7:12})" >&2
  exit 0
fi

work="$(mktemp -d /tmp/compute-bot-boundary.XXXXXX)"
trap 'rm -rf "$work"' EXIT
umask 022
arch="$(uname -m)"
pip_cmd=(pip3)
command -v pip3 >/dev/null || pip_cmd=(python3 -m pip)
target=(--only-binary=:all: --implementation cp --abi cp311 --python-version 3.11
        --platform "manylinux2014_$arch" --platform "manylinux_2_28_$arch")
"${pip_cmd[@]}" download --quiet --disable-pip-version-check --no-deps --require-hashes \
  "${target[@]}" -r "$lock" -d "$work/wheels"
"${pip_cmd[@]}" install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --require-hashes \
  --no-index --find-links "$work/wheels" --no-compile "${target[@]}" \
  --target "$work/site" -r "$lock"
rm -rf "$work/site/bin"
cp "$here/Dockerfile" "$work/Dockerfile"
# What the Dockerfile compiles: every package and module pip put in site/.
packages="$(cd "$work/site" && ls -d -- * | grep -v '\.dist-info$' | tr '\n' ' ')"

# The build's own output only when it fails (the classic builder prints a
# deprecation notice every time).
log="$work/build.log"
DOCKER_BUILDKIT=0 docker build --pull=false --force-rm --quiet \
  --build-arg "BASE=$base_id" --build-arg "PACKAGES=$packages" \
  --label org.compute-bot.test-only=boundary \
  --label "org.compute-bot.boundary-lock-sha256=$lock_sha" \
  --label "org.compute-bot.boundary-recipe-sha256=$recipe_sha" \
  --label "org.compute-bot.boundary-base-id=$base_id" \
  -t "$tag" "$work" >"$log" 2>&1 || { cat "$log" >&2; echo "error: building $tag failed (above)" >&2; exit 1; }
size="$(docker image inspect --format '{{.Size}}' "$tag")"
echo "built $tag on $base (${base_id:7:12}): + $(grep -c '^[a-z]' "$lock") packages of sandbox/boundary/requirements.lock; size $((size / 1000000)) MB" >&2
