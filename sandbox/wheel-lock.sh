# The one recipe of a hash-pinned wheel lock, sourced by sandbox/lock.sh (the
# sandbox image) and sandbox/boundary/lock.sh (the test-only boundary image):
#
#   write_lock FILE PYTHON_VERSION HEADER PACKAGE==VERSION...
#
# downloads the wheels of the packages, dependencies included (each resolved
# once by pip), for CPython PYTHON_VERSION (cp311 ABI) on manylinux x86_64 and
# aarch64 to a temporary directory, and writes FILE: each line of HEADER as a
# comment, then every package once, sorted, with the sha256 of each of its
# wheels. FILE is replaced only when all of it was written.
# Needs: pip (any Python) and PyPI.

write_lock() {
  local out="$1" python="$2" header="$3"
  shift 3
  local work rc=0
  work="$(mktemp -d /tmp/compute-bot-lock.XXXXXX)"
  for arch in x86_64 aarch64; do
    pip download --quiet --disable-pip-version-check --only-binary=:all: \
      --platform "manylinux2014_$arch" --platform "manylinux_2_28_$arch" \
      --python-version "$python" --implementation cp --abi cp311 \
      -d "$work/$arch" "$@" || rc=$?
    [ "$rc" -eq 0 ] || break
  done
  if [ "$rc" -eq 0 ]; then
    python3 - "$work" "$header" >"$work/lock" <<'PY' || rc=$?
import hashlib, pathlib, re, sys
work, header = pathlib.Path(sys.argv[1]), sys.argv[2]
pkgs = {}
for whl in sorted(work.glob("*/*.whl")):
    name, version = whl.name.split("-")[:2]
    name = re.sub(r"[-_.]+", "-", name).lower()
    digest = hashlib.sha256(whl.read_bytes()).hexdigest()
    pkgs.setdefault((name, version), set()).add(digest)
for line in header.splitlines():
    print("# " + line)
for (name, version), digests in sorted(pkgs.items()):
    hashes = " \\\n    ".join("--hash=sha256:" + d for d in sorted(digests))
    print(f"{name}=={version} \\\n    {hashes}")
PY
  fi
  [ "$rc" -ne 0 ] || mv "$work/lock" "$out"
  rm -rf "$work"
  return "$rc"
}
