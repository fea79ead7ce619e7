# shellcheck shell=bash
# bash completion for redlock(1).
#
# Install as .../bash-completion/completions/redlock, or source it.
# The first operand is a verb or a lock NAME; in the run form everything
# after NAME is the wrapped command, completed as that command would be
# (with bash-completion's _command_offset when it is loaded).

# The options that take an argument in the next word.
_redlock_takes_arg()
{
    local s c
    case $1 in
    --url | --ttl | --wait | --timeout | --conflict-exit-code | --command | \
        --prefix | --on-lost | --kill-after | --min-hold | --max-time | --limit | \
        --once-per | --lock-delay | \
        --cacert | --cacertdir | --cert | --key | --sni | --password-file | \
        --label | --metrics-dir | --skip-alert | --on-start | --on-exit | \
        --hook-timeout)
        return 0 ;;
    --*) return 1 ;;
    -?*)
        # A cluster such as -nw: the last letter may take the next word.
        s=${1#-}
        while [[ -n $s ]]; do
            c=${s:0:1}
            s=${s:1}
            case $c in
            [utwEcp]) [[ -z $s ]]; return ;;
            esac
        done
        return 1 ;;
    esac
    return 1
}

# Print the names of the held locks, one a line, asking the server(s) the
# command line names for at most a second. Prints nothing when redlock or
# a server is missing. Names are read from `list --json`; the few that
# need JSON escapes are left out.
_redlock_lock_names()
{
    local prog=$1 line re='^\{"name":"([^"\\]*)"'
    shift
    command -v "$prog" >/dev/null 2>&1 || return 0
    command -v timeout >/dev/null 2>&1 || return 0
    while IFS= read -r line; do
        [[ $line =~ $re ]] && printf '%s\n' "${BASH_REMATCH[1]}"
    done < <(timeout 1 "$prog" list --json -q "$@" 2>/dev/null </dev/null)
}

# Add to COMPREPLY the words of the list $2 that begin with $1.
# The URLs of $REDLOCK_URL, one a line: a comma or blank followed by a scheme
# starts the next one (the commas of a Sentinel URL's hosts stay in
# it), and a URL with user information is left out, since it may hold
# a password that the terminal would show.
_redlock_env_urls()
{
    local -a parts urls=()
    local p
    IFS=$', \t' read -r -a parts <<<"${REDLOCK_URL:-}"
    for p in "${parts[@]}"; do
        [[ -n $p ]] || continue
        if [[ ${#urls[@]} -eq 0 || $p =~ ^[A-Za-z][A-Za-z0-9+.-]*:// ]]; then
            urls+=("$p")
        else
            urls[${#urls[@]} - 1]+=",$p"
        fi
    done
    for p in "${urls[@]}"; do
        [[ -n $p && $p != *@* ]] && printf '%s\n' "$p"
    done
}

_redlock_add()
{
    local cur=$1 w
    for w in $2; do
        [[ $w == "$cur"* ]] && COMPREPLY+=("$w")
    done
}

_redlock()
{
    COMPREPLY=()

    # bash splits words at '=' and ':' (COMP_WORDBREAKS); join them back so
    # that --url=redis://host:6379 is one word. orig[] maps a joined word
    # to its first index in COMP_WORDS.
    local -a words=() orig=()
    local k t cword=0 glue=0
    for ((k = 0; k < ${#COMP_WORDS[@]}; k++)); do
        t=${COMP_WORDS[k]}
        if ((k > 0)) && { [[ $t =~ ^[=:]+$ ]] || ((glue)); }; then
            words[${#words[@]} - 1]+=$t
            glue=0
            [[ $t =~ ^[=:]+$ ]] && glue=1
        else
            words+=("$t")
            orig+=("$k")
            glue=0
        fi
        ((k == COMP_CWORD)) && cword=$((${#words[@]} - 1))
    done
    local cur=${words[cword]}
    # What readline will replace: the part of cur after its last '=' or ':'.
    local keep=${cur%"${cur##*[=:]}"}

    local verbs="run acquire release extend status list break stop runs"
    local opts="--url --ttl --nonblock --nb --wait --timeout
        --conflict-exit-code --command --prefix --shared --exclusive --limit
        --on-lost --kill-after --min-hold --max-time --metrics-dir --record
        --skip-alert --on-start --on-exit --hook-timeout --env --json --prom --fence
        --once-per --lock-delay --replace --respawn --fair
        --tls --cacert --cacertdir --cert --key --sni --insecure --password-file
        --label --store-args --verbose --quiet --help --version
        -u -t -n -w -E -c -p -s -x -e -v -q -h -V"

    # Walk the words before the cursor: options, then the verb or NAME.
    local i=1 w mode="" have_name=0 have_c=0 endopts=0 cmd_idx=0
    local -a operands=() srv=()
    while ((i < cword)); do
        w=${words[i]}
        if [[ $mode == run ]] && ((have_name)); then
            # The word after NAME: -c STRING, or the wrapped command.
            # With -c, nothing follows.
            if ((have_c)) || [[ $w == -c || $w == --command || $w == --command=* ]]; then
                return 0
            fi
            cmd_idx=$i
            break
        fi
        if ((!endopts)) && [[ $w == -- ]]; then
            endopts=1
        elif ((!endopts)) && [[ $w == -?* ]]; then
            case $w in
            -u | --url | -p | --prefix)
                srv+=("$w" "${words[i + 1]}") ;;
            -u?* | --url=* | -p?* | --prefix=*)
                srv+=("$w") ;;
            -c | --command | -c?* | --command=*)
                have_c=1 ;;
            esac
            _redlock_takes_arg "$w" && ((i++))
        else
            operands+=("$w")
            if ((${#operands[@]} == 1)); then
                case $w in
                run) mode=run ;;
                acquire | release | extend | status | list | break | stop | runs) mode=verb ;;
                *) mode=run have_name=1 ;;
                esac
            elif [[ $mode == run ]] && ((!have_name)); then
                have_name=1
            fi
        fi
        ((i++))
    done

    # The wrapped command and its arguments.
    if [[ $mode == run ]] && ((have_name)); then
        ((have_c)) && return 0
        ((cmd_idx)) || cmd_idx=$cword
        if ((cmd_idx == cword)) && [[ $cur == -* ]]; then
            _redlock_add "$cur" "-c --command"
            return 0
        fi
        if declare -F _command_offset >/dev/null 2>&1; then
            _command_offset "${orig[cmd_idx]}"
        elif ((cmd_idx == cword)); then
            mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        else
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
        return 0
    fi

    # The argument of an option: "--opt value" or "--opt=value".
    local opt="" val=$cur
    if ((!endopts)) && [[ $cur == --*=* ]]; then
        opt=${cur%%=*}
        val=${cur#*=}
    elif ((cword > 1)) && ((!endopts)) && _redlock_takes_arg "${words[cword - 1]}"; then
        opt=${words[cword - 1]}
    fi
    if [[ -n $opt ]]; then
        local durations="250ms 1s 10s 30s 1m 5m 10m 1h"
        case $opt in
        --on-lost)
            _redlock_add "$val" "term kill ignore" ;;
        -t | --ttl | --max-time | --hook-timeout | -[!-]*t)
            _redlock_add "$val" "$durations" ;;
        --once-per)
            _redlock_add "$val" "1m 5m 15m 1h 24h" ;;
        -w | --wait | --timeout | --kill-after | --min-hold | --lock-delay | \
            -[!-]*w)
            _redlock_add "$val" "0 $durations" ;;
        -E | --conflict-exit-code | -[!-]*E)
            _redlock_add "$val" "0 1 75" ;;
        --limit)
            _redlock_add "$val" "1 2 3 4 5 10" ;;
        --skip-alert)
            _redlock_add "$val" "2 3 5 10" ;;
        --on-start | --on-exit)
            mapfile -t COMPREPLY < <(compgen -c -- "$val") ;;
        --metrics-dir)
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -d -- "$val") ;;
        -u | --url | -[!-]*u)
            # The defaults, and the URLs of $REDLOCK_URL.
            _redlock_add "$val" "$(_redlock_env_urls) redis://127.0.0.1:6379
                redis://localhost:6379 rediss://localhost:6379
                unix:///run/redis/redis-server.sock"
            ;;
        -p | --prefix | -[!-]*p)
            _redlock_add "$val" "redlock:" ;;
        --cacert | --cert | --key | --password-file)
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -f -- "$val") ;;
        --cacertdir)
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -d -- "$val") ;;
        esac
        # A bare number completes to each unit for the duration options.
        if [[ $val =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
            case $opt in
            -t | --ttl | --max-time | -w | --wait | --timeout | --kill-after | \
                --min-hold | --hook-timeout | --once-per | --lock-delay | \
                -[!-]*t | -[!-]*w)
                for w in "${val}ms" "${val}s" "${val}m" "${val}h"; do
                    [[ " ${COMPREPLY[*]} " == *" $w "* ]] || COMPREPLY+=("$w")
                done
                ;;
            esac
        fi
        # readline replaces only what follows the last '=' or ':' of the
        # word, so drop what precedes it (less the "--opt=" part).
        local strip=$keep
        [[ $cur == --*=* ]] && strip=${keep#"$opt="}
        if [[ -n $strip ]]; then
            for k in "${!COMPREPLY[@]}"; do
                COMPREPLY[k]=${COMPREPLY[k]#"$strip"}
            done
        fi
        return 0
    fi

    if ((!endopts)) && [[ $cur == -* ]]; then
        _redlock_add "$cur" "$opts"
        return 0
    fi

    # Operands: the verb, then a lock name, then a token.
    local -a names=()
    case ${#operands[@]} in
    0)
        _redlock_add "$cur" "$verbs" ;;
    1)
        [[ $mode == verb || $mode == run ]] || return 0
        mapfile -t names < <(_redlock_lock_names "${words[0]}" "${srv[@]}")
        for w in "${names[@]}"; do
            [[ -n $w && $w == "$cur"* ]] && COMPREPLY+=("$(printf '%q' "$w")")
        done
        ;;
    2)
        case ${operands[0]} in
        release | extend)
            [[ -n ${REDLOCK_TOKEN-} ]] && _redlock_add "$cur" "$REDLOCK_TOKEN" ;;
        esac
        ;;
    esac
    return 0
}

complete -F _redlock redlock
