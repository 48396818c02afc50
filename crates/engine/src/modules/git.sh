# kk's `git` module on the host (see git.rs): ansible-core's git module as one POSIX sh
# script, the same git commands in the same order with the same decisions. The caller
# sets kk_repo kk_dest kk_version kk_remote kk_refspec kk_reference kk_force kk_depth
# kk_clone kk_update kk_bare kk_recursive kk_single_branch kk_track kk_umask kk_ssh
# kk_git kk_check kk_diff (flags are 1 or empty). Results are printed as sections
# "\n==kk:NAME==\n" followed by the value; a failure is the section "fail".
export LANG=C LC_ALL=C LC_MESSAGES=C LC_CTYPE=C LANGUAGE=C
kk_ef=$(mktemp "${TMPDIR:-/tmp}/.kk_git_err.XXXXXXXX") || exit 1
trap 'rm -f "$kk_ef"' EXIT

out() { printf '\n==kk:%s==\n%s' "$1" "$2"; }
# fail MSG: ansible's fail_json (with rc/stdout/stderr when kk_fail_rc, cmd when kk_fail_cmd).
fail() {
  out fail "$1"
  [ -n "$kk_fail_rc" ] && { out rc "$kk_rc"; out stdout "$kk_out"; out stderr "$kk_err"; }
  [ -n "$kk_fail_cmd" ] && out cmd "$kk_fail_cmd"
  exit 0
}
# run [-C DIR] CMD...: kk_rc, kk_out, kk_err (exact, trailing newlines kept). A missing
# DIR is ignored, as ansible's run_command ignores an invalid cwd.
run() {
  kk_cwd=
  if [ "$1" = -C ]; then kk_cwd=$2; shift 2; fi
  kk_fail_cmd="$*"
  kk_out=$(if [ -n "$kk_cwd" ] && [ -d "$kk_cwd" ]; then cd "$kk_cwd" || exit 1; fi
           "$@" 2>"$kk_ef"; r=$?; echo .; exit $r)
  kk_rc=$?
  kk_out=${kk_out%.}
  kk_err=$(cat "$kk_ef"; echo .)
  kk_err=${kk_err%.}
}
# run_checked: run, failing as check_rc does (msg = stderr without trailing space).
run_checked() {
  run "$@"
  if [ "$kk_rc" != 0 ]; then
    kk_fail_rc=1
    fail "$(printf '%s' "$kk_err" | sed -e :a -e '/^[[:space:]]*$/{$d;N;ba' -e '}' | sed '$s/[[:space:]]*$//')"
  fi
}
strip_nl() { printf '%s' "$1" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'; }

# The path to a repository's git dir (a .git file points elsewhere).
repo_path() {
  if [ -n "$kk_bare" ]; then rp=$kk_dest; else rp=$kk_dest/.git; fi
  if [ -f "$rp" ]; then
    gd=$(sed -n '1s/^gitdir: //p' "$rp")
    [ -n "$gd" ] || kk_bad_gitdir=1
    case $gd in /*) rp=$gd ;; *) rp=$kk_dest/$gd ;; esac
    [ -d "$rp" ] || kk_bad_gitdir=1
  fi
  if [ -n "$kk_bad_gitdir" ]; then
    fail "Current repo does not have a valid reference to a separate Git dir or it refers to the invalid path"
  fi
}

get_version() { run -C "$kk_dest" "$kk_git" rev-parse "${1:-HEAD}"; v=${kk_out%
}; }

is_remote_branch() { # DIR REMOTE VERSION
  run_checked -C "$1" "$kk_git" ls-remote "$2" -h "refs/heads/$3"
  case $kk_out in *"$3"*) return 0 ;; esac
  return 1
}
is_remote_tag() { # DIR REMOTE VERSION
  run_checked -C "$1" "$kk_git" ls-remote "$2" -t "refs/tags/$3"
  case $kk_out in *"$3"*) return 0 ;; esac
  return 1
}
branches() {
  run -C "$kk_dest" "$kk_git" branch --no-color -a
  [ "$kk_rc" = 0 ] || { kk_fail_rc=; fail "Could not determine branch data - received $kk_out"; }
  kk_branches=$(printf '%s\n' "$kk_out" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -v '^$')
}
is_local_branch() {
  branches
  printf '%s\n' "$kk_branches" | grep -qxF -e "$1" -e "* $1"
}
is_not_a_branch() {
  branches
  printf '%s\n' "$kk_branches" | grep '^\* ' | grep -q -e 'no branch' -e 'detached from' -e 'detached at'
}
# ansible's head_splitter on the first line of FILE: "None" when it is missing.
head_splitter() {
  if [ ! -e "$1" ]; then hb=None; return; fi
  l=$(head -n 1 "$1")
  [ -n "$l" ] || { hb=None; return; }
  pre="refs/remotes/$kk_remote"
  case $l in *"$pre"*) l="${l%%"$pre"*}${l#*"$pre"}" ;; esac
  l=${l##* }
  case $l in */*/*) l=${l#*/}; l=${l#*/} ;; */*) l=${l#*/} ;; esac
  hb=$l
}
get_head_branch() {
  repo_path
  hf=$rp/HEAD
  if is_not_a_branch; then hf=$rp/refs/remotes/$kk_remote/HEAD; fi
  head_splitter "$hf"
}

# ansible's get_remote_head: the sha the remote has for the version.
get_remote_head() { # REMOTE
  gr=$1; cwd=$kk_dest; tag=
  case $gr in "$kk_repo_arg"|"file://$kk_repo_home") cwd= ;; esac
  if [ "$kk_version" = HEAD ]; then
    if [ -z "$cwd" ]; then
      run_checked "$kk_git" ls-remote "$gr" -h HEAD
    else
      get_head_branch
      run_checked -C "$cwd" "$kk_git" ls-remote "$gr" -h "refs/heads/$hb"
    fi
  elif is_remote_branch "$kk_dest" "$gr" "$kk_version"; then
    run_checked -C "$cwd" "$kk_git" ls-remote "$gr" -h "refs/heads/$kk_version"
  elif is_remote_tag "$kk_dest" "$gr" "$kk_version"; then
    tag=1
    run_checked -C "$cwd" "$kk_git" ls-remote "$gr" -t "refs/tags/$kk_version*"
  else
    rh=$kk_version; return
  fi
  if [ -z "$kk_out" ]; then
    kk_fail_rc=1
    fail "Could not determine remote revision for $kk_version"
  fi
  o=$kk_out
  if [ -n "$tag" ]; then
    o=$(printf '%s\n' "$kk_out" | awk -v v="$kk_version" '
      { if (substr($0, length($0) - length(v) - 2) == v "^{}") { hit = $0; exit }
        if (substr($0, length($0) - length(v) + 1) == v) hit = $0 }
      END { print hit }')
    [ -n "$o" ] || o=$kk_out
  fi
  rh=$(printf '%s\n' "$o" | awk 'NF { print $1; exit }')
}

unfrack() { realpath -m -- "$1" 2>/dev/null || printf '%s' "$1"; }
get_remote_url() {
  run -C "$kk_dest" "$kk_git" ls-remote --get-url "$kk_remote"
  if [ "$kk_rc" != 0 ]; then url_none=1; url=; else url_none=; url=${kk_out%
}; fi
}
same_url() { [ "$url" = "$kk_repo" ] || [ "$(unfrack "$url")" = "$(unfrack "$kk_repo")" ]; }
set_remote_url() {
  get_remote_url
  if same_url; then url_changed=false; return; fi
  run -C "$kk_dest" "$kk_git" remote set-url "$kk_remote" "$kk_repo"
  if [ "$kk_rc" != 0 ]; then kk_fail_cmd=; fail "Failed to set a new url $kk_repo for $kk_remote: $kk_out $kk_err"; fi
  if [ -n "$url_none" ]; then url_changed=false; else url_changed=true; fi
}

do_fetch() { # VERSION
  fv=$1
  set_remote_url
  set -- fetch
  refspecs=
  if [ -n "$kk_depth" ]; then
    get_head_branch; cur=$hb
    if [ -n "$kk_refspec" ]; then refspecs=$kk_refspec
    elif [ "$fv" = HEAD ]; then refspecs=$cur
    elif is_remote_branch "$kk_dest" "$kk_repo" "$fv"; then
      [ "$cur" != "$fv" ] && refspecs="+refs/heads/$fv:refs/heads/$fv"
      refspecs="$refspecs +refs/heads/$fv:refs/remotes/$kk_remote/$fv"
    elif is_remote_tag "$kk_dest" "$kk_repo" "$fv"; then
      refspecs="+refs/tags/$fv:refs/tags/$fv"
    fi
    [ -n "$refspecs" ] && set -- "$@" --depth "$kk_depth"
  fi
  if [ -z "$kk_depth" ] || [ -z "$refspecs" ]; then
    if [ -n "$kk_bare" ]; then
      refspecs='+refs/heads/*:refs/heads/* +refs/tags/*:refs/tags/*'
    else
      set -- "$@" --tags
    fi
    [ -n "$kk_refspec" ] && refspecs="$refspecs $kk_refspec"
  fi
  [ -n "$kk_force" ] && set -- "$@" --force
  set -- "$@" "$kk_remote"
  set -f
  # shellcheck disable=SC2086
  run -C "$kk_dest" "$kk_git" "$@" $refspecs
  set +f
  if [ "$kk_rc" != 0 ]; then kk_fail_rc=; fail "Failed to download remote objects and refs: $kk_out $kk_err"; fi
}

do_clone() {
  mkdir -p -- "$(dirname -- "$kk_dest")" 2>/dev/null
  set -- clone
  if [ -n "$kk_bare" ]; then set -- "$@" --bare; else set -- "$@" --origin "$kk_remote"; fi
  bt=
  if is_remote_branch "$kk_dest" "$kk_repo" "$kk_version" || is_remote_tag "$kk_dest" "$kk_repo" "$kk_version"; then bt=1; fi
  if [ -n "$kk_depth" ]; then
    if [ "$kk_version" = HEAD ] || [ -n "$kk_refspec" ]; then
      set -- "$@" --depth "$kk_depth"
    elif [ -n "$bt" ]; then
      set -- "$@" --depth "$kk_depth" --branch "$kk_version"
    else
      warn "Ignoring depth argument. Shallow clones are only available for HEAD, branches, tags or in combination with refspec."
    fi
  fi
  [ -n "$kk_reference" ] && set -- "$@" --reference "$kk_reference"
  if [ -n "$kk_single_branch" ]; then
    set -- "$@" --single-branch
    [ -n "$bt" ] && set -- "$@" --branch "$kk_version"
  fi
  run_checked -C "$(dirname -- "$kk_dest")" "$kk_git" "$@" "$kk_repo" "$kk_dest"
  if [ -n "$kk_bare" ] && [ "$kk_remote" != origin ]; then
    run_checked -C "$kk_dest" "$kk_git" remote add "$kk_remote" "$kk_repo"
  fi
  if [ -n "$kk_refspec" ]; then
    if [ -n "$kk_depth" ]; then
      run_checked -C "$kk_dest" "$kk_git" fetch --depth "$kk_depth" "$kk_remote" "$kk_refspec"
    else
      run_checked -C "$kk_dest" "$kk_git" fetch "$kk_remote" "$kk_refspec"
    fi
  fi
}

switch_version() {
  if [ "$kk_version" = HEAD ]; then
    get_head_branch; br=$hb
    run -C "$kk_dest" "$kk_git" checkout --force "$br"
    [ "$kk_rc" = 0 ] || { kk_fail_rc=1; fail "Failed to checkout branch $br"; }
    run -C "$kk_dest" "$kk_git" reset --hard "$kk_remote/$br" --
    [ "$kk_rc" = 0 ] || { kk_fail_rc=1; fail "Failed to checkout branch $br"; }
    return
  fi
  if is_remote_branch "$kk_dest" "$kk_remote" "$kk_version"; then
    if [ -n "$kk_depth" ] && ! is_local_branch "$kk_version"; then
      run -C "$kk_dest" "$kk_git" fetch "--depth=$kk_depth" "$kk_remote" "+refs/heads/$kk_version:refs/heads/$kk_version" "+refs/heads/$kk_version:refs/remotes/$kk_remote/$kk_version"
      [ "$kk_rc" = 0 ] || { kk_fail_rc=1; kk_fail_cmd=; fail "Failed to fetch branch from remote: $kk_version"; }
    fi
    if ! is_local_branch "$kk_version"; then
      run -C "$kk_dest" "$kk_git" checkout --track -b "$kk_version" "$kk_remote/$kk_version"
    else
      run -C "$kk_dest" "$kk_git" checkout --force "$kk_version"
      [ "$kk_rc" = 0 ] || { kk_fail_rc=1; kk_fail_cmd=; fail "Failed to checkout branch $kk_version"; }
      run -C "$kk_dest" "$kk_git" reset --hard "$kk_remote/$kk_version"
    fi
  else
    run -C "$kk_dest" "$kk_git" checkout --force "$kk_version"
  fi
  [ "$kk_rc" = 0 ] || { kk_fail_rc=1; fail "Failed to checkout $kk_version"; }
}

# Submodules (recursive): whether they need an update, and the update.
submodules_fetch() {
  sub_changed=
  [ -f "$kk_dest/.gitmodules" ] || return 0
  for p in $(sed -n 's/^[[:space:]]*path[^=]*=[[:space:]]*//p' "$kk_dest/.gitmodules"); do
    [ -e "$kk_dest/$p/.git" ] || { sub_changed=1; return 0; }
  done
  run_checked -C "$kk_dest" "$kk_git" submodule foreach "$kk_git" rev-parse HEAD
  begin=$kk_out
  run_checked -C "$kk_dest" "$kk_git" submodule foreach "$kk_git" fetch
  if [ -n "$kk_track" ]; then
    run_checked -C "$kk_dest" "$kk_git" submodule foreach "$kk_git" rev-parse "$kk_remote/master"
    [ "$begin" = "$kk_out" ] || sub_changed=1
  else
    run_checked -C "$kk_dest" "$kk_git" submodule status
    printf '%s\n' "$kk_out" | grep -q '^[^ ]' && sub_changed=1
  fi
  return 0
}
submodule_update() {
  [ -f "$kk_dest/.gitmodules" ] || return 0
  run_checked -C "$kk_dest" "$kk_git" submodule sync
  set -- submodule update --init --recursive
  [ -n "$kk_track" ] && set -- "$@" --remote
  [ -n "$kk_force" ] && set -- "$@" --force
  run -C "$kk_dest" "$kk_git" "$@"
  [ "$kk_rc" = 0 ] || { kk_fail_rc=; kk_fail_cmd=; fail "Failed to init/update submodules: $kk_out$kk_err"; }
}

get_diff() { # BEFORE AFTER (BEFORE empty: none)
  if [ -z "$1" ]; then out diff ">> Newly checked out $2"; return; fi
  [ "$1" != "$2" ] || return 0
  [ -n "$kk_check" ] || do_fetch "$2"
  run -C "$kk_dest" "$kk_git" diff "$1" "$2"
  if [ "$kk_rc" = 0 ] && [ -n "$kk_out" ]; then out diff "$kk_out"
  elif [ "$kk_rc" = 0 ]; then out diff ">> No visual differences between $1 and $2"
  elif [ -n "$kk_err" ]; then out diff ">> Failed to get proper diff between $1 and $2:
>> $kk_err"
  else out diff ">> Failed to get proper diff between $1 and $2"; fi
}

warn() { out warning "$1"; }

# ---------------------------------------------------------------- main
if [ -z "$kk_git" ]; then
  kk_git=$(command -v git) || fail "Failed to find required executable \"git\" in paths: $PATH"
fi
if [ -n "$kk_umask" ]; then umask "$kk_umask" || fail "umask must be an octal integer"; fi
export GIT_SSH_COMMAND="${GIT_SSH:-${GIT_SSH_COMMAND:-ssh}} $kk_ssh"
kk_repo_arg=$kk_repo
case $kk_repo in "~") kk_repo=$HOME ;; "~/"*) kk_repo=$HOME/${kk_repo#"~/"} ;; esac
kk_repo_home=$kk_repo
case $kk_repo in /*) kk_repo=file://$kk_repo ;; esac
if [ -z "$kk_dest" ] && [ -n "$kk_clone" ]; then
  fail "the destination directory must be specified unless clone=no"
fi
gitconfig=
if [ -n "$kk_dest" ]; then
  case $kk_dest in "~") kk_dest=$HOME ;; "~/"*) kk_dest=$HOME/${kk_dest#"~/"} ;; esac
  case $kk_dest in /*) ;; *) kk_dest=$PWD/$kk_dest ;; esac
  kk_dest=$(realpath -m -s -- "$kk_dest")
  repo_path
  gitconfig=$rp/config
fi

local_mods=
url_changed=
main_url_changed=
if { [ -n "$kk_dest" ] && [ ! -e "$gitconfig" ]; } || { [ -z "$kk_dest" ] && [ -z "$kk_clone" ]; }; then
  if [ -n "$kk_check" ] || [ -z "$kk_clone" ]; then
    get_remote_head "$kk_repo"
    out changed true; out before_none ""; out after "$rh"
    [ -n "$kk_diff" ] && get_diff "" "$rh"
    exit 0
  fi
  do_clone
  kk_before=; kk_before_set=
elif [ -z "$kk_update" ]; then
  get_version; out changed false; out before "$v"; out after "$v"
  exit 0
else
  if [ -z "$kk_bare" ]; then
    run -C "$kk_dest" "$kk_git" status --porcelain
    printf '%s\n' "$kk_out" | grep -v '^??' | grep -q . && local_mods=1
  fi
  get_version; kk_before=$v; kk_before_set=1
  if [ -n "$local_mods" ]; then
    [ -n "$kk_force" ] || { kk_fail_rc=; kk_fail_cmd=; out changed false; out before "$kk_before"; fail "Local modifications exist in the destination: $kk_dest (force=no)."; }
    if [ -z "$kk_check" ]; then
      run_checked -C "$kk_dest" "$kk_git" reset --hard HEAD
      out msg "Local modifications exist in the destination: $kk_dest"
    fi
  fi
  if [ -n "$kk_check" ]; then
    get_remote_url
    if [ -n "$url_none" ]; then url_changed=null
    elif [ -n "$url" ] && ! same_url; then url_changed=true
    elif [ -z "$url" ]; then url_changed=empty
    else url_changed=false; fi
    out remote_url_changed "$url_changed"
    get_remote_head "$kk_remote"
    if [ "$kk_before" != "$rh" ] || [ "$url_changed" = true ]; then out changed true; else out changed false; fi
    out before "$kk_before"; out after "$rh"
    [ -n "$kk_diff" ] && get_diff "$kk_before" "$rh"
    exit 0
  fi
  set_remote_url
  main_url_changed=$url_changed
  out remote_url_changed "$url_changed"
  do_fetch "$kk_version"
fi

[ -n "$kk_bare" ] || switch_version
sub_changed=
if [ -n "$kk_recursive" ] && [ -z "$kk_bare" ]; then
  submodules_fetch
  if [ -n "$sub_changed" ]; then
    out submodules_changed true
    submodule_update
  fi
fi
get_version; after=$v
if [ -z "$kk_before_set" ]; then out before_none ""; else out before "$kk_before"; fi
out after "$after"
if [ -z "$kk_before_set" ] || [ "$kk_before" != "$after" ] || [ -n "$local_mods" ] || [ -n "$sub_changed" ] || [ "$main_url_changed" = true ]; then
  out changed true
  if [ -n "$kk_diff" ]; then
    if [ -n "$kk_before_set" ]; then get_diff "$kk_before" "$after"; else get_diff "" "$after"; fi
  fi
else
  out changed false
fi
exit 0
