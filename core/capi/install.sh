#!/usr/bin/env bash
# Installs the OpenSHMEM C ABI into a prefix, for C and C++ users who build with their usual
# tools:
#
#   core/capi/install.sh /opt/shmem
#
#   bin/      oshcc, oshCC, oshc++ (and oshcxx), oshrun (and shmemrun);
#             aclshmem-cc, aclshmem-c++ (and aclshmem-cxx) for CANN host programs
#   include/  shmem.h, shmemx.h; cann/ (CANN's shmem.h and host/ headers); acl/ (acl.h)
#   lib/      libshmem.so (soname libshmem.so), libshmem.a, libascendcl.so (the ACL stand-in),
#             pkgconfig/shmem.pc                    pkg-config --cflags --libs shmem
#             cmake/shmem/shmemConfig.cmake         find_package(shmem) -> targets shmem::shmem
#                                                   (OpenSHMEM), shmem::cann (CANN host programs),
#                                                   shmem::cpu_debug (CANN kernels as host code)
#                                                   and shmem::ascendcl (the ACL stand-in)
#   lib64     -> lib, where CANN's layout keeps libascendcl.so ($ASCEND_HOME_PATH/lib64)
#   set_env.sh                                      . PREFIX/set_env.sh, as CANN's set_env.sh
#
# It builds the release profile first. SHMEM_INSTALL_FROM=<dir> installs the artifacts already
# built in <dir> (a `target/<profile>` directory holding libshmem.so and the tools) instead.
set -euo pipefail

if [ $# -ne 1 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: $0 PREFIX" >&2
    exit 2
fi
repo="$(cd "$(dirname "$0")/../.." && pwd)"
prefix="$1"
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"

if [ -n "${SHMEM_INSTALL_FROM:-}" ]; then
    from="$SHMEM_INSTALL_FROM"
else
    (cd "$repo" && cargo build --release -p shmem-c --lib --bins && cargo build --release -p shmem-acl --lib)
    from="$repo/target/release"
fi
for artifact in libshmem.so libshmem.a libascendcl.so oshcc oshCC oshcxx oshrun aclshmem-cc aclshmem-cxx; do
    if [ ! -f "$from/$artifact" ]; then
        echo "$0: $from/$artifact is missing; build with 'cargo build --release -p shmem-c -p shmem-acl'" >&2
        exit 1
    fi
done
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$repo/Cargo.toml")"

mkdir -p "$prefix/bin" "$prefix/include" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/shmem"
install -m 0755 "$from/oshcc" "$from/oshCC" "$from/oshcxx" "$from/oshrun" "$from/aclshmem-cc" "$from/aclshmem-cxx" "$prefix/bin/"
ln -sf oshcxx "$prefix/bin/oshc++"
ln -sf oshrun "$prefix/bin/shmemrun"
ln -sf aclshmem-cxx "$prefix/bin/aclshmem-c++"
install -m 0644 "$repo/core/capi/include/"*.h "$prefix/include/"
(cd "$repo/core/capi/include" && find cann -name '*.h' -exec install -D -m 0644 {} "$prefix/include/{}" \;)
mkdir -p "$prefix/include/acl"
install -m 0644 "$repo/sim/acl/include/acl/"*.h "$prefix/include/acl/"
install -m 0755 "$from/libshmem.so" "$from/libascendcl.so" "$prefix/lib/"
install -m 0644 "$from/libshmem.a" "$prefix/lib/"
ln -sfn lib "$prefix/lib64"

# The environment CANN's set_env.sh sets up, for this prefix (relocatable: it finds itself).
cat > "$prefix/set_env.sh" <<'EOF'
# set_env.sh: the environment a CANN SHMEM install's set_env.sh gives, for this prefix of the
# shmem simulator. Source it:  . PREFIX/set_env.sh
#   SHMEM_HOME_PATH     this prefix (CANN SHMEM's install root)
#   ASCEND_HOME_PATH    this prefix, as a CANN toolkit root: lib64/libascendcl.so is the ACL
#   ASCEND_TOOLKIT_HOME stand-in, include/acl/acl.h its header
#   PATH                gains bin/ (aclshmem-cc, aclshmem-c++, oshcc, oshrun, ...)
#   LD_LIBRARY_PATH     gains lib/ (libshmem.so, libascendcl.so)
_shmem_env="${BASH_SOURCE[0]:-$0}"
_shmem_prefix="$(cd "$(dirname "$_shmem_env")" && pwd)"
export SHMEM_HOME_PATH="$_shmem_prefix"
export ASCEND_HOME_PATH="$_shmem_prefix"
export ASCEND_TOOLKIT_HOME="$_shmem_prefix"
export PATH="$_shmem_prefix/bin${PATH:+:$PATH}"
export LD_LIBRARY_PATH="$_shmem_prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset _shmem_env _shmem_prefix
EOF

# The system libraries a Rust static library needs (what `rustc --print native-static-libs`
# reports for this target); only static linking uses them.
cat > "$prefix/lib/pkgconfig/shmem.pc" <<EOF
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: shmem
Description: OpenSHMEM 1.5 and 1.6 over the shmem simulator
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lshmem
Libs.private: -ldl -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
EOF

cat > "$prefix/lib/cmake/shmem/shmemConfig.cmake" <<'EOF'
# find_package(shmem): the imported targets
#   shmem::shmem     OpenSHMEM programs: libshmem.so with OpenSHMEM's shmem.h
#   shmem::cann      CANN SHMEM host programs: libshmem.so with CANN's shmem.h (include/cann)
#                    and acl/acl.h, linking shmem::ascendcl too
#   shmem::ascendcl  the ACL runtime stand-in, libascendcl.so, with acl/acl.h
#   shmem::cpu_debug kernel source compiled as host code for the simulator's AI cores (as
#                    AscendC's CPU debug): the device API and the AscendC subset; with
#                    shmem::cann. Compile with clang++ where kernels dereference UB addresses.
get_filename_component(_shmem_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET shmem::shmem)
  add_library(shmem::shmem SHARED IMPORTED)
  set_target_properties(shmem::shmem PROPERTIES
    IMPORTED_LOCATION "${_shmem_prefix}/lib/libshmem.so"
    IMPORTED_SONAME "libshmem.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_shmem_prefix}/include")
endif()
if(NOT TARGET shmem::ascendcl)
  add_library(shmem::ascendcl SHARED IMPORTED)
  set_target_properties(shmem::ascendcl PROPERTIES
    IMPORTED_LOCATION "${_shmem_prefix}/lib/libascendcl.so"
    IMPORTED_SONAME "libascendcl.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_shmem_prefix}/include")
endif()
if(NOT TARGET shmem::cann)
  # CANN's include directory comes first, so <shmem.h> is CANN's.
  add_library(shmem::cann SHARED IMPORTED)
  set_target_properties(shmem::cann PROPERTIES
    IMPORTED_LOCATION "${_shmem_prefix}/lib/libshmem.so"
    IMPORTED_SONAME "libshmem.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_shmem_prefix}/include/cann;${_shmem_prefix}/include"
    INTERFACE_LINK_LIBRARIES shmem::ascendcl)
endif()
if(NOT TARGET shmem::cpu_debug)
  add_library(shmem::cpu_debug INTERFACE IMPORTED)
  set_target_properties(shmem::cpu_debug PROPERTIES
    INTERFACE_COMPILE_DEFINITIONS "__CCE_KT_TEST__=1;ASCENDC_CPU_DEBUG=1;__DAV_C220_VEC__=1;__NPU_ARCH__=2201"
    INTERFACE_INCLUDE_DIRECTORIES "${_shmem_prefix}/include/cann/ascendc"
    INTERFACE_COMPILE_OPTIONS "$<$<CXX_COMPILER_ID:Clang>:-Wno-unknown-attributes>;$<$<CXX_COMPILER_ID:GNU>:-Wno-attributes>"
    INTERFACE_LINK_OPTIONS "-pthread"
    INTERFACE_LINK_LIBRARIES shmem::cann)
endif()
set(shmem_INCLUDE_DIRS "${_shmem_prefix}/include")
set(shmem_LIBRARIES shmem::shmem)
set(SHMEM_RUN "${_shmem_prefix}/bin/oshrun")
unset(_shmem_prefix)
EOF

cat > "$prefix/lib/cmake/shmem/shmemConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF

echo "installed into $prefix"
