#!/usr/bin/env bash
# Builds llmspool_<version>_<arch>.deb from the release build, with dpkg-deb.
# The package installs /usr/bin/llmspool, the unit, the man page and bash completion, and
# on install creates the llmspool user, /var/spool/llmspool and /etc/llmspool/config.json.
set -euo pipefail
cd "$(dirname "$0")/.."
# A tag like v1.2.0 gives 1.2.0; without one, 0.1~git<date>.<hash>.
if tag=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
    version=${VERSION:-$(echo "${tag#v}" | sed 's/-/+/; s/-/./g')}
else
    version=${VERSION:-0.1~git$(git log -1 --format=%cd.%h --date=format:%Y%m%d 2>/dev/null || echo 0)}
fi
arch=$(dpkg --print-architecture)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root"  # it becomes /: mktemp's 0700 must not reach the package
make install PREFIX=/usr DESTDIR="$root" >/dev/null
gzip -9n "$root/usr/share/man/man1/llmspool.1"
install -d "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CONTROL
Package: llmspool
Version: $version
Architecture: $arch
Maintainer: llmspool developers <dev@llmspool.invalid>
Depends: adduser, libinotifytools0, libcurl4, libmicrohttpd12
Section: net
Priority: optional
Description: spool daemon for long LLM calls
 Drop an OpenAI-compatible request into a folder, get the answer as a file,
 whatever happens in between: crashes, restarts, rate limits, stalls.
CONTROL
cat > "$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    getent passwd llmspool >/dev/null || adduser --system --group --home /var/spool/llmspool --no-create-home llmspool
    if [ ! -e /etc/llmspool/config.json ]; then
        llmspool init /var/spool/llmspool --config /etc/llmspool/config.json >/dev/null
        chown -R llmspool:llmspool /var/spool/llmspool
        chown root:llmspool /etc/llmspool/config.json
        chmod 0640 /etc/llmspool/config.json
    fi
    if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
fi
POSTINST
chmod 0755 "$root/DEBIAN/postinst"
cat > "$root/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
# Stop the daemon before its binary goes; requests stay in the spool for the next start.
if [ -d /run/systemd/system ] && { [ "$1" = remove ] || [ "$1" = upgrade ]; }; then
    systemctl stop llmspool.service >/dev/null 2>&1 || true
fi
PRERM
chmod 0755 "$root/DEBIAN/prerm"
cat > "$root/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
# purge removes the configuration and the user, never the spool: it holds other people's
# requests and answers (remove /var/spool/llmspool by hand when it is no longer wanted).
if [ "$1" = purge ]; then
    rm -f /etc/llmspool/config.json
    rmdir /etc/llmspool 2>/dev/null || true
    if getent passwd llmspool >/dev/null && command -v deluser >/dev/null; then deluser --system llmspool >/dev/null 2>&1 || true; fi
fi
POSTRM
chmod 0755 "$root/DEBIAN/postrm"
out="llmspool_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$out" >/dev/null
echo "$out"
