#!/bin/sh
# deb-src.sh -- make `apt-get source` work on a machine that has only
# binary (`deb`) entries, as a fresh Debian image has.  For every enabled
# Debian archive entry (one-line sources.list or deb822 .sources) it writes
# the matching `deb-src` entry into one file of its own,
# /etc/apt/sources.list.d/heapscript-deb-src.sources, then runs
# `apt-get update`.  Nothing is done when the source package asked for
# ($1, e.g. lua5.4) is already known to apt.  Needs root.
set -e
pkg=${1:-lua5.4}
if apt-cache showsrc "$pkg" 2>/dev/null | grep -q '^Package:'; then
  echo "deb-src: $pkg sources already known to apt"; exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "deb-src: apt has no deb-src entries; as root run: sh engine/win/deb-src.sh" >&2; exit 1
fi
out=/etc/apt/sources.list.d/heapscript-deb-src.sources
tmp=$out.tmp
: >"$tmp"
# deb822 stanzas: copy those whose Types has deb (and not deb-src already)
# and whose URIs are a Debian archive, with Types: deb-src.
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && [ "$f" != "$out" ] || continue
  awk '
    function flush() {
      if (n && isdeb && !hassrc && debian && enabled) {
        for (i = 1; i <= n; i++) print (i == typ ? "Types: deb-src" : line[i]); print ""
      }
      n = 0; isdeb = hassrc = debian = 0; enabled = 1
    }
    BEGIN { enabled = 1 }
    /^[ \t]*$/ { flush(); next }
    /^#/ { next }
    { line[++n] = $0 }
    /^Types:/ { typ = n; for (i = 2; i <= NF; i++) { if ($i == "deb") isdeb = 1; if ($i == "deb-src") hassrc = 1 } }
    /^URIs:/ && /debian/ { debian = 1 }
    /^Enabled:[ \t]*no/ { enabled = 0 }
    END { flush() }' "$f" >>"$tmp"
done
# one-line format: deb [opts] URI suite comps -> deb-src ...
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  grep -E '^deb[ \t].*debian' "$f" | sed 's/^deb/deb-src/' | while read -r l; do
    grep -qxF "$l" "$f" || echo "$l"
  done >>"$tmp.list"
done 2>/dev/null || true
if [ -s "$tmp.list" ]; then mv "$tmp.list" "${out%.sources}.list"; else rm -f "$tmp.list"; fi
if [ -s "$tmp" ]; then mv "$tmp" "$out"; else rm -f "$tmp"; fi
echo "deb-src: added $(ls "$out" "${out%.sources}.list" 2>/dev/null | tr '\n' ' ')"
apt-get update
