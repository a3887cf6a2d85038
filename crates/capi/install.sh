#!/usr/bin/env bash
# Installs libhetblas.so, hetblas.h and hetblas.pc under PREFIX (default /usr/local).
# usage: crates/capi/install.sh [PREFIX] [LIB]   (LIB default: target/release/libhetblas.so)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-/usr/local}
lib=${2:-$here/../../target/release/libhetblas.so}
libdir=$prefix/lib
install -d "$libdir/pkgconfig" "$prefix/include"
install -m 755 "$lib" "$libdir/libhetblas.so"
install -m 644 "$here/include/hetblas.h" "$prefix/include/hetblas.h"
sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$libdir|" "$here/hetblas.pc.in" > "$libdir/pkgconfig/hetblas.pc"
echo "installed $libdir/libhetblas.so, $prefix/include/hetblas.h, $libdir/pkgconfig/hetblas.pc"
