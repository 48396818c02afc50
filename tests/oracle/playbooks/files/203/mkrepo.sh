#!/bin/sh
# Builds the apt fixture's two local repositories under /var/tmp/kk203 from nothing:
# main (kk203-a 1.0 and 2.0, kk203-b depending on kk203-c, kk203-r recommending
# kk203-rec) and next (kk203-a 3.0, NotAutomatic like backports), plus a lone .deb
# (kk203-d) for `deb:`. SOURCE_DATE_EPOCH makes the .deb files the same on every run.
set -e
export SOURCE_DATE_EPOCH=1700000000
top=/var/tmp/kk203
rm -rf "$top"
mkdir -p "$top/main" "$top/next" "$top/build"
deb() { # deb DIR NAME VERSION [EXTRA-CONTROL-LINE]
  root="$top/build/$2_$3"
  mkdir -p "$root/DEBIAN" "$root/usr/share/$2"
  echo "$2 $3" > "$root/usr/share/$2/VERSION"
  printf 'Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: kk tests <kk@example.invalid>\n%sDescription: kk apt fixture package\n' \
    "$2" "$3" "${4:+$4
}" > "$root/DEBIAN/control"
  dpkg-deb --build --root-owner-group "$root" "$1/$2_$3_all.deb" >/dev/null
}
deb "$top/main" kk203-a 1.0
deb "$top/main" kk203-a 2.0
deb "$top/main" kk203-b 1.0 'Depends: kk203-c'
deb "$top/main" kk203-c 1.0
deb "$top/main" kk203-r 1.0 'Recommends: kk203-rec'
deb "$top/main" kk203-rec 1.0
deb "$top/next" kk203-a 3.0
deb "$top" kk203-d 1.0
index() { # index DIR SUITE [EXTRA-RELEASE-LINES]
  cd "$1"
  : > Packages
  for f in *.deb; do
    dpkg-deb -f "$f" >> Packages
    printf 'Filename: ./%s\nSize: %s\nSHA256: %s\n\n' "$f" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -d' ' -f1)" >> Packages
  done
  printf 'Suite: %s\nCodename: %s\nDate: Tue, 14 Nov 2023 22:13:20 UTC\n%sSHA256:\n %s %s Packages\n' "$2" "$2" "$3" \
    "$(sha256sum Packages | cut -d' ' -f1)" "$(stat -c %s Packages)" > Release
}
index "$top/main" kk203-main ''
index "$top/next" kk203-next 'NotAutomatic: yes
ButAutomaticUpgrades: yes
'
rm -rf "$top/build"
echo "repositories in $top"
