# Usage: bash pip.sh SOURCE_DIR BUILD_DIR
# pip install . and pip wheel . with the python3 first on PATH (CI: pyenv's),
# as a user does: venv 1 gets `pip install .` at SOURCE_DIR; hello and train
# run on 2 ranks through venv 1's distcomm-launch (with the venv's python
# named, with the venv activated and `python3`, and as a bare .py from the
# un-activated venv's launcher). `pip wheel .` reuses pip install's build
# folder (one C build); the wheel goes into a fresh venv 2, which then runs
# hello with SOURCE_DIR, BUILD_DIR and the pip build folder out of reach
# (tmpfs over them, in a mount namespace, where unshare -m works). A C
# program built with the wheel's pkg-config file runs too. numpy and
# scikit-build-core come from PyPI (--no-build-isolation: no other build
# download); exits 77 (skip) when they cannot be installed.
set -u
S=$(cd "${1:?usage: $0 SOURCE_DIR BUILD_DIR}" && pwd)
B=$(cd "${2:?}" && pwd)
PY=${DC_PIP_PYTHON:-python3}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
skip() {
    echo "skip: $*"
    exit 77
}
T=$(mktemp -d "${TMPDIR:-/tmp}/dc-pip.XXXXXX")
trap 'rm -rf "$T"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1 DISTCOMM_TIMEOUT=30
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
unset PYTHONPATH VIRTUAL_ENV
command -v "$PY" >/dev/null || skip "$PY is not on PATH"
"$PY" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(sysconfig.get_paths()["include"] + "/Python.h"))' ||
    skip "$PY has no Python.h (its -dev package)"
echo "python: $(command -v "$PY") ($("$PY" -V 2>&1))"

venv() { # venv DIR [PACKAGE...]: a venv with numpy and the packages
    local d=$1
    shift
    timeout 120 "$PY" -m venv "$d" > "$T/venv.log" 2>&1 || skip "$PY -m venv: $(tail -2 "$T/venv.log")"
    timeout 300 "$d/bin/pip" install -q numpy "$@" > "$T/pypi.log" 2>&1 ||
        skip "cannot install numpy $* from PyPI (unreachable?): $(tail -3 "$T/pypi.log")"
}
V1=$T/v1 V2=$T/v2
venv "$V1" scikit-build-core

# pip install . (the C build: library, extension for $PY, tools).
(cd "$S" && timeout 600 "$V1/bin/pip" install --no-build-isolation -C build-dir="$T/skb" . \
    > "$T/install.log" 2>&1) || fail "pip install .: $(tail -20 "$T/install.log")"
for t in distcomm-launch distcomm-config distcomm-perf; do
    [ -x "$V1/bin/$t" ] || fail "pip install . did not put $t in the venv's bin"
done
ext=$(ls "$V1"/lib/python3*/site-packages/distcomm/_distcomm.*.so 2>/dev/null)
[ -f "$ext" ] || fail "no extension in the venv's site-packages"
"$V1/bin/python" -c 'import distcomm, sys; assert distcomm.__file__.startswith(sys.prefix), distcomm.__file__' ||
    fail "the venv's python does not import the installed distcomm"
for f in "$V1"/bin/distcomm-* "$ext" "$V1"/lib/python3*/site-packages/distcomm/lib/lib*.so.*; do
    ldd "$f" | grep -q 'not found' && fail "ldd $f: $(ldd "$f" | grep 'not found')"
done

two_lines='^[01] \[2\. 2\. 2\. 2\. 2\. 2\. 2\. 2\. 2\. 2\.\]$'
expect() { # expect WHAT REGEX COUNT LOG
    n=$(grep -Ec "$2" "$4")
    [ "$n" = "$3" ] || fail "$1: $n lines (want $3) match '$2'; output: $(tail -15 "$4")"
    echo "ok: $1"
}
cd "$T" || fail "cd $T"
cp "$S/examples/python/hello.py" "$S/examples/python/train.py" "$T/"
timeout 120 "$V1/bin/distcomm-launch" -n 2 -- "$V1/bin/python" hello.py > h1.log 2>&1
expect "hello, pip install ., the venv's python" "$two_lines" 2 h1.log
(PATH=$V1/bin:$PATH VIRTUAL_ENV=$V1 timeout 120 distcomm-launch -n 2 -- python3 train.py --steps 20) > t1.log 2>&1
expect "train, venv activated, python3" '^weights identical on all 2 ranks$' 1 t1.log
# A bare .py from the venv's launcher, venv not activated: the venv's python
# (the python3 on PATH has no distcomm).
timeout 120 "$V1/bin/distcomm-launch" -n 2 -- hello.py > h2.log 2>&1
expect "hello.py from the venv's launcher, not activated" "$two_lines" 2 h2.log
[ "$("$V1/bin/distcomm-launch" --print-python)" = "$V1/bin/python3" ] ||
    fail "--print-python from the venv: $("$V1/bin/distcomm-launch" --print-python), not $V1/bin/python3"

# pip wheel . (the same build folder: nothing to compile again).
(cd "$S" && timeout 600 "$V1/bin/pip" wheel --no-build-isolation --no-deps -C build-dir="$T/skb" \
    -w "$T/dist" . > "$T/wheel.log" 2>&1) || fail "pip wheel .: $(tail -20 "$T/wheel.log")"
whl=$(ls "$T"/dist/distcomm-*.whl 2>/dev/null)
[ -f "$whl" ] || fail "pip wheel . made no distcomm-*.whl: $(ls "$T/dist")"
echo "wheel: $(basename "$whl") ($(stat -c %s "$whl") bytes)"
"$PY" -m zipfile -l "$whl" > "$T/wheel.list"
for f in distcomm/lib/libdistcomm.so.0 distcomm/include/distcomm.h distcomm/lib/pkgconfig/distcomm.pc \
    distcomm/__init__.py 'distcomm/_distcomm\..*\.so' 'data/scripts/distcomm-launch' \
    'data/scripts/distcomm-perf' 'data/scripts/distcomm-config'; do
    grep -Eq "$f " "$T/wheel.list" || fail "the wheel lacks $f"
done

# A fresh venv from the wheel alone; the source, the build folders and the
# pip build folder out of reach.
venv "$V2" "$whl"
site=$(echo "$V2"/lib/python3*/site-packages)
for f in "$V2"/bin/distcomm-* "$site"/distcomm/*.so "$site"/distcomm/lib/lib*.so.*; do
    readelf -d "$f" | grep -E 'R(UN)?PATH' | grep -qF -e "$S" -e "$B" -e "$T/skb" &&
        fail "$f's runpath names the build: $(readelf -d "$f" | grep -E 'R(UN)?PATH')"
done
hidden="timeout 120"
if unshare -m true 2>/dev/null; then
    hidden="unshare -m sh -c 'mount -t tmpfs none \"\$0\" && mount -t tmpfs none \"\$1\" && mount -t tmpfs none \"\$2\" && shift 2 && exec timeout 120 \"\$@\"' $B $T/skb $S"
    echo "source and build folders hidden by tmpfs mounts"
else
    rm -rf "$T/skb"
    echo "unshare -m is refused: the pip build folder is removed, the source stays"
fi
eval "$hidden" sh -c "'! test -e $S/CMakeLists.txt -o -e $B/CMakeCache.txt'" ||
    fail "the source or build folder is still in reach"
eval "$hidden" "$V2/bin/distcomm-launch" -n 2 -- "$V2/bin/python" hello.py > h3.log 2>&1
expect "hello from the wheel in a fresh venv" "$two_lines" 2 h3.log

# C: hello built with the wheel's pkg-config file, on the venv's launcher.
cc=${CC:-cc}
if command -v pkg-config >/dev/null && command -v "$cc" >/dev/null; then
    flags=$(PKG_CONFIG_PATH=$site/distcomm/lib/pkgconfig pkg-config --cflags --libs distcomm) ||
        fail "pkg-config with the wheel's distcomm.pc"
    libdir=$(PKG_CONFIG_PATH=$site/distcomm/lib/pkgconfig pkg-config --variable=libdir distcomm)
    # shellcheck disable=SC2086 # the flags are words
    "$cc" -o hello-c "$S/examples/hello/hello.c" $flags -Wl,-rpath,"$libdir" || fail "compiling hello.c with the wheel"
    eval "$hidden" "$V2/bin/distcomm-launch" -n 2 -- ./hello-c > c.log 2>&1 || fail "hello-c: $(tail -5 c.log)"
    echo "ok: C hello linked with the wheel's libdistcomm: $(head -1 c.log)"
fi
echo "pip install . and pip wheel . passed"
