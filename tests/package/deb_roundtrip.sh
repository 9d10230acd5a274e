# Usage: bash deb_roundtrip.sh BUILD_DIR SOURCE_DIR C_COMPILER
# Makes the .deb from BUILD_DIR, unpacks it with dpkg -x into a scratch root
# $R, checks its control fields and files, then compiles examples/hello
# against $R with pkg-config and with CMake's find_package and runs both on
# 2 ranks under $R's distcomm-launch. Then (root) installs it with dpkg -i
# in a mount namespace where /usr, /etc and /var are throwaway overlays and
# does the same with no path hints, plus `import distcomm` and dpkg -r.
# Nothing is installed on the machine. Exits 77 (skip) only when a tool it
# needs is missing.
set -u
B=$(cd "${1:?usage: $0 BUILD_DIR SOURCE_DIR C_COMPILER}" && pwd)
S=$(cd "${2:?}" && pwd)
CC=${3:?}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
for t in cpack cmake dpkg-deb pkg-config; do
    command -v "$t" >/dev/null || { echo "skip: $t is missing (apt-get install dpkg pkgconf cmake)"; exit 77; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/dc-package.XXXXXX")
trap 'rm -rf "$T"' EXIT
R=$T/root
arch=$(gcc -print-multiarch 2>/dev/null || "$CC" -print-multiarch)
[ -n "$arch" ] || fail "no multiarch triplet from the compiler"
L=$R/usr/lib/$arch

# The .deb, from the build tree (cpack installs it into its own staging folder).
timeout 120 cpack -G DEB -B "$T/deb" --config "$B/CPackConfig.cmake" > "$T/cpack.log" 2>&1 ||
    fail "cpack -G DEB: $(tail -5 "$T/cpack.log")"
deb=$(ls "$T"/deb/distcomm_*_*.deb 2>/dev/null)
[ -f "$deb" ] || fail "no distcomm_*.deb in $T/deb: $(ls "$T/deb")"

# Depends: Debian package names only; what the library dlopen()s is optional.
depends=$(dpkg-deb -f "$deb" Depends)
recommends=$(dpkg-deb -f "$deb" Recommends)
suggests=$(dpkg-deb -f "$deb" Suggests)
echo "Depends: $depends"
echo "Recommends: $recommends"
echo "Suggests: $suggests"
for p in $(echo "$depends" | tr ',|' '\n\n' | sed 's/(.*)//; s/ //g'); do
    dpkg-query -W "$p" >/dev/null 2>&1 || apt-cache show "$p" >/dev/null 2>&1 ||
        fail "Depends names '$p', which is not a Debian package"
done
echo "$depends" | grep -q libc6 || fail "Depends lacks libc6"
echo "$depends" | grep -q libcjson1 || fail "Depends lacks libcjson1 (the tools link it)"
echo "$depends" | grep -Eq 'sodium|mpi|mpich' && fail "Depends has an optional (dlopen'ed) library"
echo "$recommends" | grep -q libsodium23 || fail "Recommends lacks libsodium23"
echo "$suggests" | grep -q openmpi-bin || fail "Suggests lacks MPI"

# Unpacked into the scratch root: the files a user gets.
dpkg-deb -x "$deb" "$R" || fail "dpkg-deb -x"
for f in usr/include/distcomm.h usr/bin/distcomm-launch usr/bin/distcomm-config \
    usr/bin/distcomm-perf "usr/lib/$arch/libdistcomm.a" "usr/lib/$arch/pkgconfig/distcomm.pc" \
    "usr/lib/$arch/cmake/distcomm/distcommConfig.cmake" usr/share/man/man1/distcomm-launch.1.gz \
    usr/share/man/man1/distcomm-config.1.gz usr/share/man/man1/distcomm-perf.1.gz; do
    [ -e "$R/$f" ] || fail "the package lacks /$f"
done
real=$(ls "$L"/libdistcomm.so.*.*.* 2>/dev/null)
[ -f "$real" ] || fail "no libdistcomm.so.X.Y.Z in /usr/lib/$arch"
[ "$(readlink "$L/libdistcomm.so.0")" = "$(basename "$real")" ] || fail "libdistcomm.so.0 does not link to $real"
[ "$(readlink "$L/libdistcomm.so")" = libdistcomm.so.0 ] || fail "libdistcomm.so does not link to libdistcomm.so.0"
objdump -p "$real" | grep -q 'SONAME *libdistcomm.so.0$' || fail "SONAME is not libdistcomm.so.0"
grep -q '^prefix=/usr$' "$L/pkgconfig/distcomm.pc" || fail "distcomm.pc's prefix is not /usr"
# MLX's MPI face beside the library, found by --mlx from the installed launcher.
[ -f "$L/libdistcomm-ompi.so" ] || fail "the package lacks /usr/lib/$arch/libdistcomm-ompi.so"
objdump -p "$L/libdistcomm-ompi.so" | grep -q 'RUNPATH *\$ORIGIN$' || fail "libdistcomm-ompi.so's RUNPATH is not \$ORIGIN"
face=$(timeout -k 5 30 "$R/usr/bin/distcomm-launch" --mlx -n 1 -- sh -c 'echo "$MLX_MPI_LIBNAME"')
[ "$face" = "$(realpath "$L/libdistcomm-ompi.so")" ] || fail "--mlx from the package gave MLX_MPI_LIBNAME=$face"
zcat "$R/usr/share/man/man1/distcomm-launch.1.gz" | head -1 | grep -q '^\.TH DISTCOMM-LAUNCH 1' || fail "man page header"
zcat "$R/usr/share/man/man1/distcomm-launch.1.gz" | grep -q -- '--starting-port' || fail "man page lacks the options"

# hello with pkg-config (the sysroot maps /usr to $R/usr).
export PKG_CONFIG_LIBDIR=$L/pkgconfig PKG_CONFIG_SYSROOT_DIR=$R
flags=$(pkg-config --cflags --libs distcomm) || fail "pkg-config --cflags --libs distcomm"
echo "pkg-config: $flags"
# shellcheck disable=SC2086 # the flags are words
"$CC" -o "$T/hello-pc" "$S/examples/hello/hello.c" $flags || fail "compiling hello with pkg-config"
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR

# hello with CMake's find_package.
mkdir -p "$T/proj"
cat > "$T/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.18)
project(hello_user C)
find_package(distcomm 0.1 REQUIRED)
add_executable(hello "$S/examples/hello/hello.c")
target_link_libraries(hello PRIVATE distcomm::distcomm)
add_executable(hello_static "$S/examples/hello/hello.c")
target_link_libraries(hello_static PRIVATE distcomm::distcomm_static)
CM
timeout 120 cmake -S "$T/proj" -B "$T/proj/b" -DCMAKE_C_COMPILER="$CC" \
    -DCMAKE_PREFIX_PATH="$R/usr" > "$T/cm.log" 2>&1 || fail "find_package(distcomm): $(tail -5 "$T/cm.log")"
grep -q "^distcomm_DIR:PATH=$L/cmake/distcomm$" "$T/proj/b/CMakeCache.txt" ||
    fail "find_package found another distcomm: $(grep distcomm_DIR "$T/proj/b/CMakeCache.txt")"
timeout 120 cmake --build "$T/proj/b" > "$T/cb.log" 2>&1 || fail "building with distcomm::distcomm: $(tail -5 "$T/cb.log")"

# Each runs on 2 ranks under the unpacked launcher, with the unpacked library.
run2() { # run2 WHAT PROGRAM: 2 ranks print the sum of two ranks' ones
    local out
    out=$(LD_LIBRARY_PATH=$L timeout -k 5 60 "$R/usr/bin/distcomm-launch" -n 2 -- "$2" 2>&1 | sort)
    [ "$out" = "0 array([2, 2, 2, 2, 2, 2, 2, 2, 2, 2], dtype=float32)
1 array([2, 2, 2, 2, 2, 2, 2, 2, 2, 2], dtype=float32)" ] || fail "$1 on 2 ranks: $out"
}
for h in hello-pc proj/b/hello; do
    LD_LIBRARY_PATH=$L ldd "$T/$h" | grep -q "libdistcomm.so.0 => $L/libdistcomm.so.0" ||
        fail "$h does not load the unpacked library: $(ldd "$T/$h" | grep distcomm)"
done
ldd "$T/proj/b/hello" | grep -q "libdistcomm.so.0 => $L/" || fail "CMake's hello lacks the package's rpath"
run2 "hello (pkg-config)" "$T/hello-pc"
run2 "hello (find_package)" "$T/proj/b/hello"
run2 "hello (distcomm::distcomm_static)" "$T/proj/b/hello_static"

# The Python package, where the package puts it, under Debian's python3.
py=$(ls -d "$R"/usr/lib/python3*/dist-packages/distcomm 2>/dev/null | head -1)
if [ -z "$py" ]; then
    echo "note: the package has no Python module (the build had no python3-dev)"
elif ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    echo "note: python3-numpy missing; the Python package is not run"
else
    out=$(PYTHONPATH=$(dirname "$py") timeout -k 5 60 "$R/usr/bin/distcomm-launch" -n 2 -- \
        /usr/bin/python3 -c 'import distcomm, numpy as np; print(distcomm.__file__, distcomm.all_sum(np.ones(3, np.float32)))' 2>&1)
    [ "$(echo "$out" | grep -c "^$py/__init__.py \[2. 2. 2.\]$")" = 2 ] || fail "python from the package: $out"
fi

# cmake --install into a DESTDIR with another prefix: the .pc follows it.
DESTDIR=$T/d timeout 60 cmake --install "$B" --prefix /opt/dc > "$T/inst.log" 2>&1 || fail "cmake --install: $(tail -3 "$T/inst.log")"
grep -q '^prefix=/opt/dc$' "$T/d/opt/dc/lib/$arch/pkgconfig/distcomm.pc" || fail "cmake --install --prefix /opt/dc: .pc prefix"
# Installed for real with dpkg -i (its dependency check, its ldconfig), on
# this machine but in a private mount namespace where /usr, /etc and /var are
# overlays whose changes vanish with it; then used with no path hints at all.
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v dpkg >/dev/null; then
    echo "note: not root or no unshare/dpkg: dpkg -i into an overlay not tried"
    echo "package round trip passed ($(basename "$deb"), unpacked only)"
    exit 0
fi
before=$(dpkg-query -W -f '${Status}' distcomm 2>/dev/null)
cat > "$T/inside.sh" <<'IN'
set -eu
T=$1 deb=$2 S=$3 CC=$4
for d in usr etc var; do
    mkdir -p "$T/ovl/$d/up" "$T/ovl/$d/work"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$T/ovl/$d/up,workdir=$T/ovl/$d/work" "/$d"
done
echo "overlays: /usr /etc /var"
dpkg -i --no-triggers "$deb" > "$T/dpkg.log" 2>&1 || { cat "$T/dpkg.log"; echo "FAIL: dpkg -i"; exit 1; }
mkdir -p "$T/inst" && cd "$T/inst"
# shellcheck disable=SC2046 # the flags are words
"$CC" -o hello-pc "$S/examples/hello/hello.c" $(pkg-config --cflags --libs distcomm)
mkdir proj
printf 'cmake_minimum_required(VERSION 3.18)\nproject(u C)\nfind_package(distcomm REQUIRED)\nadd_executable(hello %s)\ntarget_link_libraries(hello PRIVATE distcomm::distcomm)\n' \
    "$S/examples/hello/hello.c" > proj/CMakeLists.txt
cmake -S proj -B proj/b -DCMAKE_C_COMPILER="$CC" > cmake.log 2>&1 || { cat cmake.log; exit 1; }
grep "^distcomm_DIR:PATH=" proj/b/CMakeCache.txt
cmake --build proj/b > build.log 2>&1 || { cat build.log; exit 1; }
for h in ./hello-pc proj/b/hello; do
    ldd "$h" | grep -E "libdistcomm.so.0 => (/usr)?/lib/"
    env -u LD_LIBRARY_PATH PATH=/usr/bin:/bin timeout -k 5 60 distcomm-launch -n 2 -- "$h" | sort
done
if [ -d /usr/lib/python3/dist-packages/distcomm ] || ls -d /usr/lib/python3*/dist-packages/distcomm >/dev/null 2>&1; then
    env -u PYTHONPATH /usr/bin/python3 -c 'import distcomm; print("python", distcomm.__file__)'
fi
if command -v man >/dev/null; then man -w distcomm-launch; else ls /usr/share/man/man1/distcomm-launch.1.gz; fi
dpkg -r distcomm > "$T/dpkg-r.log" 2>&1 || { cat "$T/dpkg-r.log"; echo "FAIL: dpkg -r"; exit 1; }
[ ! -e /usr/bin/distcomm-launch ] && echo "removed"
IN
timeout -k 5 240 unshare -m --propagation private bash "$T/inside.sh" "$T" "$deb" "$S" "$CC" > "$T/inside.out" 2>&1
st=$?
cat "$T/inside.out"
if ! grep -q "^overlays:" "$T/inside.out"; then
    echo "note: overlay mounts not allowed here: dpkg -i not tried"
else
    [ $st = 0 ] || fail "installing with dpkg -i (exit $st)"
    two="0 array([2, 2, 2, 2, 2, 2, 2, 2, 2, 2], dtype=float32)"
    [ "$(grep -cF "$two" "$T/inside.out")" = 2 ] && grep -qF "${two/0 /1 }" "$T/inside.out" ||
        fail "installed hello did not run on 2 ranks"
    [ "$(grep -Ec 'libdistcomm.so.0 => (/usr)?/lib/' "$T/inside.out")" = 2 ] || fail "installed hello does not load /usr/lib's libdistcomm"
    grep -q "^distcomm_DIR:PATH=/usr/lib/.*/cmake/distcomm$" "$T/inside.out" || fail "find_package did not find /usr's distcomm"
    [ -z "$py" ] || grep -q "^python /usr/lib/python3.*/dist-packages/distcomm/__init__.py$" "$T/inside.out" ||
        fail "import distcomm without PYTHONPATH"
    grep -q "^removed$" "$T/inside.out" || fail "dpkg -r left the launcher"
    grep -q "^/usr/share/man/man1/distcomm-launch.1.gz$" "$T/inside.out" || fail "man -w distcomm-launch"
fi
# Nothing of it outlives the namespace.
[ "$(dpkg-query -W -f '${Status}' distcomm 2>/dev/null)" = "$before" ] || fail "the real dpkg database changed"
[ -n "$before" ] || [ ! -e /usr/bin/distcomm-launch ] || fail "/usr/bin/distcomm-launch left on the machine"
echo "package round trip passed ($(basename "$deb"))"
