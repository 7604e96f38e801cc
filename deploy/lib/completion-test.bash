#!/usr/bin/env bash
# deploy/lib/completion-test.bash — drives the bash completion of cairn as bash would and compares
# it with the real CLI (run by deploy/check).
#
# Usage: completion-test.bash COMPLETION_FILE TREE_FILE CAIRN
#   COMPLETION_FILE  deploy/completion/cairn.bash
#   TREE_FILE        `kit.py cli-tree CAIRN`: path|subcommands|options, one command path a line
#   CAIRN            the cairn binary (its `replay --help` names the models)
#
# Checks: `complete -p cairn` names a function after sourcing; for every command path, completing an
# empty word offers every subcommand and completing "-" every option (and no option the help does not
# list); a few partial words complete to exactly what the help says they should; --model and --dir
# complete their values. Prints each problem; exit 1 if there is any. Never reads stdin.
set -uo pipefail

(($# == 3)) || { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
completion_file=$1
tree_file=$2
cairn=$3
failures=0
fail() { echo "FAIL: completion: $*"; failures=$((failures + 1)); }

# shellcheck source=/dev/null
source "$completion_file" || { fail "sourcing $completion_file failed"; exit 1; }
spec=$(complete -p cairn 2>/dev/null) || { fail "'complete -p cairn' finds nothing after sourcing $completion_file"; exit 1; }
fn=$(sed -n 's/.*-F \([^ ]*\) .*/\1/p' <<<"$spec")
if [[ -z $fn ]] || ! declare -F "$fn" >/dev/null; then fail "'$spec' names no function"; exit 1; fi

# complete WORD... : COMPREPLY for the command line "WORD...", the last word being completed.
complete_line() {
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMP_LINE="$*"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  local prev=""
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  "$fn" cairn "${COMP_WORDS[COMP_CWORD]}" "$prev"
  printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort -u
}
words() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -u; }
# expect_exactly LINE EXPECTED GOT
expect_exactly() {
  if [[ "$2" != "$3" ]]; then
    fail "'$1' completes to [$(tr '\n' ' ' <<<"$3")], the help says [$(tr '\n' ' ' <<<"$2")]"
  fi
}

declare -A subs_of opts_of
paths=0
while IFS='|' read -r path subs opts; do
  subs_of[$path]=$subs
  opts_of[$path]=$opts
  paths=$((paths + 1))
done <"$tree_file"
((paths > 1)) || { fail "$tree_file holds $paths command paths"; exit 1; }
globals=${opts_of[cairn]}

for path in "${!subs_of[@]}"; do
  read -r -a pw <<<"$path"
  if [[ -n ${subs_of[$path]} ]]; then
    missing=$(comm -23 <(words "${subs_of[$path]}") <(complete_line "${pw[@]}" ""))
    [[ -z $missing ]] || fail "'$path ' does not offer the subcommand(s): $(tr '\n' ' ' <<<"$missing")"
  fi
  got=$(complete_line "${pw[@]}" -)
  missing=$(comm -23 <(words "${opts_of[$path]}") - <<<"$got")
  [[ -z $missing ]] || fail "'$path -' does not offer the option(s): $(tr '\n' ' ' <<<"$missing")"
  extra=$(comm -13 <(words "${opts_of[$path]} $globals") - <<<"$got")
  [[ -z $extra ]] || fail "'$path -' offers option(s) that its --help does not list: $(tr '\n' ' ' <<<"$extra")"
done

# Partial words: the expected completions are the help's words with that prefix.
prefixed() { words "$1" | grep -- "^$2" || true; }
partial() {  # partial EXPECTED-FROM WORD...
  local from=$1
  shift
  expect_exactly "$*" "$(prefixed "$from" "${!#}")" "$(complete_line "$@")"
}
partial "${subs_of[cairn]}" cairn st
partial "${subs_of[cairn dead]}" cairn dead re
partial "${subs_of[cairn journal]}" cairn journal ex
partial "${subs_of[cairn index]}" cairn index v
partial "${subs_of[cairn dead]}" cairn --url http://127.0.0.1:1 --json dead r
partial "$globals" cairn --j
partial "${opts_of[cairn status]} $globals" cairn status --js
partial "${opts_of[cairn dead ls]} $globals" cairn dead ls --ol
partial "${opts_of[cairn index add]} $globals" cairn index add entries_by_user --sh
partial "${opts_of[cairn journal export]} $globals" cairn --timeout 5 journal export --dir /tmp --o
partial "${opts_of[cairn replay]} $globals" cairn replay --model edge --wa

# Values: the models `cairn replay --help` names, and directories only after --dir.
models=$("$cairn" replay --help </dev/null | sed -n 's/.*--model .*model: \(.*\)$/\1/p' | tr -d ',')
[[ -n $models ]] || fail "cannot read the models from 'cairn replay --help'"
expect_exactly "cairn replay --model " "$(words "$models")" "$(complete_line cairn replay --model "")"
expect_exactly "cairn dead ls --model c" "$(prefixed "$models" c)" "$(complete_line cairn dead ls --model c)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/journal-a" "$tmp/journal-b"
touch "$tmp/journal-file"
expect_exactly "cairn journal stat --dir $tmp/jo" "$(printf '%s\n' "$tmp/journal-a" "$tmp/journal-b")" \
  "$(complete_line cairn journal stat --dir "$tmp/jo")"

if ((failures)); then
  echo "completion: $failures problem(s)"
  exit 1
fi
echo "ok: completion knows all $paths command paths of cairn --help, their subcommands and options; partial words and values complete right"
