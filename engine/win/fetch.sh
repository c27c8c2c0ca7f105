#!/bin/sh
# fetch.sh DIR -- Debian's source packages of Lua 5.4 and LPeg, at exactly
# the versions the Linux build links (liblua5.4-dev, lua-lpeg-dev), unpacked
# with Debian's patches into DIR/lua and DIR/lpeg.  Not committed: fetched
# at build time (`make deps` makes sure apt knows deb-src entries).
set -e
dir=$1
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }
lv=$(ver liblua5.4-dev); pv=$(ver lua-lpeg-dev)
if [ -z "$lv" ] || [ -z "$pv" ]; then
  echo "fetch: liblua5.4-dev and lua-lpeg-dev must be installed (make deps)" >&2; exit 1
fi
command -v dpkg-source >/dev/null || { echo "fetch: dpkg-source missing: apt-get install dpkg-dev (make deps)" >&2; exit 1; }
rm -rf "$dir/tmp"; mkdir -p "$dir/tmp"
cd "$dir/tmp"
if ! apt-get source -q "lua5.4=$lv" "lua-lpeg=$pv" >../fetch.log 2>&1; then
  cat ../fetch.log >&2
  echo "fetch: apt-get source failed; are deb-src entries there? (make deps, or sh engine/win/deb-src.sh as root)" >&2
  exit 1
fi
cd ..
rm -rf lua lpeg
mv tmp/lua5.4-*/ lua; mv tmp/lua-lpeg-*/ lpeg
rm -rf tmp
echo "lua5.4=$lv lua-lpeg=$pv" >VERSIONS
echo "fetch: $(cat VERSIONS) into $dir"
