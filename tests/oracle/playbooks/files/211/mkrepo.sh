#!/bin/sh
# Builds the dnf/yum fixtures' local RPM repositories under /var/tmp/kkNNN (NNN = $1, 211
# or 212, so both fixtures can run at once) from nothing, with rpmbuild and createrepo_c:
# main (kkNNN-a 1.0, kkNNN-b 1.0 requiring kkNNN-c, kkNNN-c 1.0) and next (kkNNN-a 2.0),
# and writes /etc/yum.repos.d/kkNNN.repo with only main enabled (next is turned on for
# `latest`). Tiny noarch packages, one file each.
set -e
n=$1
top=/var/tmp/kk$n
rm -rf "$top"
mkdir -p "$top/main" "$top/next" "$top/build" /etc/yum.repos.d
rpm_() { # rpm_ DIR NAME VERSION [REQUIRES]
  cat > "$top/build/$2.spec" <<SPEC
Name: $2
Version: $3
Release: 1
Summary: kk dnf fixture package
License: MIT
BuildArch: noarch
${4:+Requires: $4}

%description
A package for kk's dnf oracle fixtures.

%install
mkdir -p %{buildroot}/usr/share/$2
echo "$2 $3" > %{buildroot}/usr/share/$2/VERSION

%files
/usr/share/$2/VERSION
SPEC
  rpmbuild -bb --quiet --define "_topdir $top/build/top" "$top/build/$2.spec" >/dev/null 2>&1
  mv "$top/build/top/RPMS/noarch/$2-$3-1.noarch.rpm" "$1/"
}
rpm_ "$top/main" "kk$n-a" 1.0
rpm_ "$top/main" "kk$n-b" 1.0 "kk$n-c"
rpm_ "$top/main" "kk$n-c" 1.0
rpm_ "$top/next" "kk$n-a" 2.0
createrepo_c -q "$top/main"
createrepo_c -q "$top/next"
printf '[kk%s-main]\nname=kk %s main\nbaseurl=file://%s/main\ngpgcheck=0\nmetadata_expire=0\nenabled=1\n\n[kk%s-next]\nname=kk %s next\nbaseurl=file://%s/next\ngpgcheck=0\nmetadata_expire=0\nenabled=0\n' \
  "$n" "$n" "$top" "$n" "$n" "$top" > "/etc/yum.repos.d/kk$n.repo"
rm -rf "$top/build"
echo "repositories in $top"
