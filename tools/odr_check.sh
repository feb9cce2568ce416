#!/usr/bin/env bash
# Catches one-definition-rule clashes: two different definitions of one C++ name in two .cpp files
# (two structs onnxmap::detail::Chunk, say) compile and link without a word, and the program then
# uses one definition's layout for the other's objects (std::vector<Chunk> is instantiated once).
# GCC's link-time optimizer compares the definitions of every named type across the translation
# units it links: this builds the shared library (every library object) and the onnxmap command
# with -flto, without optimization (only that comparison is wanted), and makes -Wodr and
# -Wlto-type-mismatch errors. Exits non-zero, naming both definitions, on a clash.
#
#   ./tools/odr_check.sh [BUILD_DIR]        (default build-odr; tools/test.sh runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-odr}
flags="-Werror=odr -Werror=lto-type-mismatch"
if [ ! -f "$build/build.ninja" ]; then
  CXX="$(command -v ccache >/dev/null && echo "ccache ")g++" meson setup "$build" --buildtype=plain -Db_lto=true -Dtests=disabled -Dbench=disabled \
    -Dpython=disabled -Dcpp_args="$flags" -Dcpp_link_args="$flags" >/dev/null
fi
log=$build/odr-check.log
if meson compile -C "$build" onnxmap:shared_library onnxmap:executable >"$log" 2>&1; then
  echo "odr: no one-definition-rule clash in the library or the onnxmap command"
  exit 0
fi
if grep -qE 'One Definition Rule|\[-Werror=(odr|lto-type-mismatch)\]' "$log"; then
  echo "odr: two translation units define one name differently; rename one, or move it into an" \
    "anonymous namespace if it is local to its file ($log):" >&2
  grep -E 'error:|note:' "$log" | grep -vE 'lto-wrapper|collect2|ld returned' | head -20 >&2
else
  echo "odr: the LTO build failed ($log):" >&2
  tail -20 "$log" >&2
fi
exit 1
