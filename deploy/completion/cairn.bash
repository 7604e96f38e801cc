# bash completion for `cairn`, the operator's CLI of cairnd: its commands, their subcommands and
# options, and the values of a few options (files, directories, models). Install:
#   install -m 0644 deploy/completion/cairn.bash /usr/share/bash-completion/completions/cairn
# or source it from ~/.bashrc. deploy/check verifies it against `cairn --help` and each command's --help.

# Options every command accepts (the CLI's global options may come after the command too).
_cairn_global_options="-h --help --url --cacert --cert --key --token -c --config --json --timeout"

# The subcommands of each command path, keyed by the words that lead to it.
declare -gA _cairn_subcommands=(
  ["cairn"]="status dead errors apply trace journal replay index reshard"
  ["cairn dead"]="ls show edit reinject drop"
  ["cairn errors"]="ls retry-now"
  ["cairn apply"]="pause resume"
  ["cairn journal"]="stat check export import"
  ["cairn index"]="ls add drop clean verify status"
  ["cairn reshard"]="plan split status verify cancel"
)

# The options of each command path (besides the global ones).
declare -gA _cairn_options=(
  ["cairn"]=""
  ["cairn status"]=""
  ["cairn dead"]=""
  ["cairn dead ls"]="--shard --model --error --older-than --newer-than --limit --cursor"
  ["cairn dead show"]=""
  ["cairn dead edit"]="--op --op-file"
  ["cairn dead reinject"]="--all --shard --model --error --older-than --newer-than --keep-attempts"
  ["cairn dead drop"]="--all --shard --model --error --older-than --newer-than -y --yes"
  ["cairn errors"]=""
  ["cairn errors ls"]="--shard --limit"
  ["cairn errors retry-now"]="--shard --seq"
  ["cairn apply"]=""
  ["cairn apply pause"]="--shard --all"
  ["cairn apply resume"]="--shard --all"
  ["cairn trace"]=""
  ["cairn journal"]=""
  ["cairn journal stat"]="--dir"
  ["cairn journal check"]="--dir"
  ["cairn journal export"]="--dir --out --from-seq --to-seq --since --until"
  ["cairn journal import"]="--dry-run --include-expired-counters --rate --wait --wait-timeout"
  ["cairn replay"]="--from-seq --to-seq --since --until --shard --model --name --graph --kind --table --metric --key --file --dry-run --include-expired-counters --rate --batch --wait --wait-timeout"
  ["cairn index"]=""
  ["cairn index ls"]=""
  ["cairn index add"]="--kind --table --column --property --shard-on --no-wait"
  ["cairn index drop"]="-y --yes"
  ["cairn index clean"]="--rate --no-wait"
  ["cairn index verify"]="--repair --rate --no-wait"
  ["cairn index status"]="-w --watch --verify"
  ["cairn reshard"]=""
  ["cairn reshard plan"]="--shard --to"
  ["cairn reshard split"]="--shard --to -y --yes --wait --wait-timeout"
  ["cairn reshard status"]="-w --watch"
  ["cairn reshard verify"]=""
  ["cairn reshard cancel"]="-y --yes"
)

# Options followed by a value; the word after one of them is that value, not a command.
_cairn_value_options=" --url --cacert --cert --key --token -c --config --timeout --shard --model --error --older-than --newer-than --limit --cursor --op --op-file --seq --dir --out --from-seq --to-seq --since --until --name --graph --kind --table --metric --key --file --rate --batch --wait-timeout --column --property --shard-on --to "

_cairn() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local prev=""
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  COMPREPLY=()

  # The command path so far: the words that name subcommands, skipping options and their values.
  local path=cairn word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $_cairn_value_options == *" $word "* ]]; then
      ((i++))
    elif [[ $word != -* ]] && [[ " ${_cairn_subcommands[$path]-} " == *" $word "* ]]; then
      path+=" $word"
    fi
  done

  # The value of an option.
  if [[ $_cairn_value_options == *" $prev "* ]]; then
    case $prev in
      --cacert | --cert | --key | -c | --config | --op-file | --file | --out)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        ;;
      --dir)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -d -- "$cur")
        ;;
      --model)
        mapfile -t COMPREPLY < <(compgen -W "edge node entity cell counter index" -- "$cur")
        ;;
      --url)
        mapfile -t COMPREPLY < <(compgen -W "http://127.0.0.1:8080 https://" -- "$cur")
        compopt -o nospace 2>/dev/null
        ;;
    esac
    return 0
  fi

  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${_cairn_options[$path]-} $_cairn_global_options" -- "$cur")
    return 0
  fi
  if [[ -n ${_cairn_subcommands[$path]-} ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${_cairn_subcommands[$path]}" -- "$cur")
  elif [[ $path == "cairn journal import" ]]; then
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
  return 0
}

complete -F _cairn cairn
