#!/bin/sh
# Builds the package fixture's local repository under /var/tmp/kk208 from nothing:
# kk208-a 1.0, and kk208-b 1.0 depending on kk208-c 1.0. SOURCE_DATE_EPOCH makes the .deb
# files the same on every run.
set -e
export SOURCE_DATE_EPOCH=1700000000
top=/var/tmp/kk208
rm -rf "$top"
mkdir -p "$top/repo" "$top/build"
deb() { # deb NAME VERSION [EXTRA-CONTROL-LINE]
  root="$top/build/$1_$2"
  mkdir -p "$root/DEBIAN" "$root/usr/share/$1"
  echo "$1 $2" > "$root/usr/share/$1/VERSION"
  printf 'Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: kk tests <kk@example.invalid>\n%sDescription: kk package fixture package\n' \
    "$1" "$2" "${3:+$3
}" > "$root/DEBIAN/control"
  dpkg-deb --build --root-owner-group "$root" "$top/repo/$1_$2_all.deb" >/dev/null
}
deb kk208-a 1.0
deb kk208-b 1.0 'Depends: kk208-c'
deb kk208-c 1.0
cd "$top/repo"
: > Packages
for f in *.deb; do
  dpkg-deb -f "$f" >> Packages
  printf 'Filename: ./%s\nSize: %s\nSHA256: %s\n\n' "$f" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -d' ' -f1)" >> Packages
done
printf 'Suite: kk208\nCodename: kk208\nDate: Tue, 14 Nov 2023 22:13:20 UTC\nSHA256:\n %s %s Packages\n' \
  "$(sha256sum Packages | cut -d' ' -f1)" "$(stat -c %s Packages)" > Release
rm -rf "$top/build"
echo "repository in $top"
