# fish completion for redlock(1).
#
# Install as .../fish/vendor_completions.d/redlock.fish. The first operand
# is a verb or a lock NAME; in the run form everything after NAME is the
# wrapped command, completed as that command would be.

# Read the tokens before the cursor. Prints two lines: where the cursor
# stands (first, name, pattern, token, more, after-name, command or done)
# and the index in `commandline -opc` where the wrapped command starts
# (0 when it has not started).
function __redlock_parse
    set -l tokens (commandline -opc)
    set -l argopts -u --url -t --ttl -w --wait --timeout -E \
        --conflict-exit-code -c --command -p --prefix --on-lost \
        --kill-after --min-hold --max-time --limit --once-per --lock-delay \
        --cacert --cacertdir --cert --key --sni --password-file --label \
        --metrics-dir --skip-alert --on-start --on-exit --hook-timeout
    set -l mode
    set -l operands
    set -l skip 0
    set -l endopts 0
    set -l have_c 0
    set -l have_name 0
    set -l i 1
    for tok in $tokens[2..-1]
        set i (math $i + 1)
        if test $skip -eq 1
            set skip 0
            continue
        end
        if test "$mode" = run -a $have_name -eq 1
            # The word after NAME: -c STRING, or the wrapped command.
            if test $have_c -eq 1; or contains -- $tok -c --command
                or string match -q -- '--command=*' $tok
                printf '%s\n' done 0
            else
                printf '%s\n' command $i
            end
            return
        end
        if test $endopts -eq 0
            if test "$tok" = --
                set endopts 1
                continue
            end
            if string match -q -- '-?*' $tok
                if string match -qr -- '^(-c|--command)(=.*)?$|^-c.' $tok
                    set have_c 1
                end
                if contains -- $tok $argopts
                    or string match -qr -- '^-[^-]*[utwEcp]$' $tok
                    set skip 1
                end
                continue
            end
        end
        set -a operands $tok
        if test (count $operands) -eq 1
            switch $tok
                case run
                    set mode run
                case acquire release extend status list break stop runs
                    set mode $tok
                case '*'
                    set mode run
                    set have_name 1
            end
        else if test "$mode" = run -a $have_name -eq 0
            set have_name 1
        end
    end

    set -l n (count $operands)
    set -l state more
    if test $n -eq 0
        set state first
    else if test "$mode" = run
        if test $have_name -eq 0
            set state name
        else if test $have_c -eq 1
            set state done
        else
            set state after-name
        end
    else if test $n -eq 1
        if contains -- "$mode" list runs
            set state pattern
        else
            set state name
        end
    else if test $n -eq 2; and contains -- $mode release extend
        set state token
    end
    printf '%s\n' $state 0
end

# True if the cursor stands where one of the arguments names.
function __redlock_state_is
    set -l parsed (__redlock_parse)
    contains -- $parsed[1] $argv
end

# True where redlock's own options may be given.
function __redlock_opts_ok
    not __redlock_state_is after-name command done
end

# The held lock names, from the servers and prefix on the command line,
# asking for at most a second.
function __redlock_lock_names
    set -l tokens (commandline -opc)
    set -l prog $tokens[1]
    set -l srv
    set -l i 2
    while test $i -le (count $tokens)
        switch $tokens[$i]
            case -u --url -p --prefix
                set -a srv $tokens[$i]
                set i (math $i + 1)
                test $i -le (count $tokens); and set -a srv $tokens[$i]
            case '-u?*' '--url=*' '-p?*' '--prefix=*'
                set -a srv $tokens[$i]
        end
        set i (math $i + 1)
    end
    command -sq timeout; or return
    command -sq $prog; or return
    # Names come from `list --json`; the few that need JSON escapes are
    # left out.
    timeout 1 $prog list --json -q $srv 2>/dev/null </dev/null |
        string replace -rf '^\{"name":"([^"\\\\]*)".*' '$1'
end

function __redlock_durations
    set -l val (string replace -r -- '^--[^=]*=' '' (commandline -ct))
    contains -- -z $argv; and echo 0
    printf '%s\n' 250ms 1s 10s 30s 1m 5m 10m 1h
    if string match -qr -- '^[0-9]+(\.[0-9]+)?$' $val
        printf '%s\n' $val{ms,s,m,h}
    end
end

# $REDLOCK_URL: a comma or blank followed by a scheme starts the next URL (the
# commas of a Sentinel URL's hosts stay in it); a URL with user
# information may hold a password, which the terminal would show.
function __redlock_urls
    set -l urls
    for p in (string split -n -- , (string replace -ra '\s' , -- "$REDLOCK_URL"))
        if test (count $urls) -eq 0; or string match -qr '^[A-Za-z][A-Za-z0-9+.-]*://' -- $p
            set -a urls $p
        else
            set urls[-1] "$urls[-1],$p"
        end
    end
    string match -v -- '*@*' $urls | string match -v -- ''
    printf '%s\n' redis://127.0.0.1:6379 redis://localhost:6379 \
        rediss://localhost:6379 unix:///run/redis/redis-server.sock
end

# Complete the wrapped command as its own completion would.
function __redlock_complete_command
    set -l parsed (__redlock_parse)
    set -l tokens (commandline -opc)
    set -l rest
    if test $parsed[2] -gt 0
        set rest (string escape -- $tokens[$parsed[2]..-1])
    end
    __fish_complete_subcommand --commandline $rest (commandline -ct)
end

complete -c redlock -f

# Options.
complete -c redlock -n __redlock_opts_ok -s u -l url -x -a '(__redlock_urls)' -d 'Redis server (repeat for a quorum)'
complete -c redlock -n __redlock_opts_ok -s t -l ttl -x -a '(__redlock_durations)' -d 'Lock time-to-live, renewed every ttl/3'
complete -c redlock -n __redlock_opts_ok -s n -l nonblock -d 'Fail at once if the lock is held'
complete -c redlock -n __redlock_opts_ok -l nb -d 'Fail at once if the lock is held'
complete -c redlock -n __redlock_opts_ok -s w -l wait -x -a '(__redlock_durations -z)' -d 'Give up after waiting this long'
complete -c redlock -n __redlock_opts_ok -l timeout -x -a '(__redlock_durations -z)' -d 'Give up after waiting this long'
complete -c redlock -n __redlock_opts_ok -s E -l conflict-exit-code -x -a '0 1 75' -d 'Exit status when the lock is not obtained'
complete -c redlock -n __redlock_opts_ok -s c -l command -x -a '(__fish_complete_command)' -d 'Run STRING with /bin/sh -c'
complete -c redlock -n __redlock_opts_ok -s p -l prefix -x -a 'redlock:' -d 'Key prefix'
complete -c redlock -n __redlock_opts_ok -s s -l shared -d 'Take a shared lock'
complete -c redlock -n __redlock_opts_ok -s x -l exclusive -d 'Take an exclusive lock (the default)'
complete -c redlock -n __redlock_opts_ok -s e -d 'Take an exclusive lock (the default)'
complete -c redlock -n __redlock_opts_ok -l limit -x -a '1 2 3 4 5 10' -d 'A shared lock of at most N holders (a semaphore)'
complete -c redlock -n __redlock_opts_ok -l on-lost -x -a 'term\t"SIGTERM, then SIGKILL after --kill-after" kill\t"SIGKILL at once" ignore\t"Let the command run on"' -d 'What to do when the lock is lost'
complete -c redlock -n __redlock_opts_ok -l kill-after -x -a '(__redlock_durations -z)' -d 'Grace between SIGTERM and SIGKILL'
complete -c redlock -n __redlock_opts_ok -l min-hold -x -a '(__redlock_durations -z)' -d 'Keep the lock at least this long after acquiring'
complete -c redlock -n __redlock_opts_ok -l max-time -x -a '(__redlock_durations)' -d 'Stop the command after this long and exit 124'
complete -c redlock -n __redlock_opts_ok -l metrics-dir -x -a '(__fish_complete_directories)' -d "Leave each run's outcome in DIR for node_exporter"
complete -c redlock -n __redlock_opts_ok -l record -d "Keep NAME's last run in Redis"
complete -c redlock -n __redlock_opts_ok -l skip-alert -x -a '2 3 5 10' -d 'With --record: the Nth busy attempt in a row exits 1'
complete -c redlock -n __redlock_opts_ok -l on-start -x -a '(__fish_complete_command)' -d 'Run CMD once the lock is held'
complete -c redlock -n __redlock_opts_ok -l on-exit -x -a '(__fish_complete_command)' -d 'Run CMD at the end, told the outcome'
complete -c redlock -n __redlock_opts_ok -l hook-timeout -x -a '(__redlock_durations)' -d 'Kill a hook after this long'
complete -c redlock -n __redlock_opts_ok -l once-per -x -a '1m 5m 15m 1h 24h' -d 'At most one successful run per period of the server clock'
complete -c redlock -n __redlock_opts_ok -l lock-delay -x -a '(__redlock_durations -z)' -d 'After a lost lock, no holder for this long'
complete -c redlock -n __redlock_opts_ok -l replace -d 'Ask the holders to stop and take over before the waiters'
complete -c redlock -n __redlock_opts_ok -l respawn -d 'Standby: run again whenever the lock is had, until signalled'
complete -c redlock -n __redlock_opts_ok -l fair -d 'Wait in a queue: waiters are granted in order'
complete -c redlock -n __redlock_opts_ok -l env -d 'acquire: print shell assignments, not the token'
complete -c redlock -n __redlock_opts_ok -l json -d 'status, list, runs: print JSON objects'
complete -c redlock -n __redlock_opts_ok -l prom -d 'runs: print Prometheus text'
complete -c redlock -n __redlock_opts_ok -l fence -d 'break: also remove the fencing counter'
complete -c redlock -n __redlock_opts_ok -l tls -d 'TLS to the redis:// servers too'
complete -c redlock -n __redlock_opts_ok -l cacert -r -F -d 'Trust the CA certificates in FILE'
complete -c redlock -n __redlock_opts_ok -l cacertdir -x -a '(__fish_complete_directories)' -d 'Trust the CA certificates in DIR'
complete -c redlock -n __redlock_opts_ok -l cert -r -F -d 'Client certificate (mutual TLS)'
complete -c redlock -n __redlock_opts_ok -l key -r -F -d 'Private key of --cert'
complete -c redlock -n __redlock_opts_ok -l sni -x -d 'Send and verify NAME instead of the host'
complete -c redlock -n __redlock_opts_ok -l insecure -d "Do not verify the servers' certificates"
complete -c redlock -n __redlock_opts_ok -l password-file -r -F -d 'Read the password from the first line of FILE'
complete -c redlock -n __redlock_opts_ok -l label -x -d 'Record TEXT as what the holder runs'
complete -c redlock -n __redlock_opts_ok -l store-args -d "Record the command's arguments, not its name only"
complete -c redlock -n __redlock_opts_ok -s v -l verbose -d 'More diagnostics'
complete -c redlock -n __redlock_opts_ok -s q -l quiet -d 'No busy messages or warnings'
complete -c redlock -n __redlock_opts_ok -s h -l help -d 'Print help and exit'
complete -c redlock -n __redlock_opts_ok -s V -l version -d 'Print the version and exit'

# Verbs: any other first operand is a lock NAME.
complete -c redlock -n '__redlock_state_is first' -a run -d 'Run a command under a lock (any NAME)'
complete -c redlock -n '__redlock_state_is first' -a acquire -d 'Take a lock and print its token'
complete -c redlock -n '__redlock_state_is first' -a release -d 'Release a lock held by TOKEN'
complete -c redlock -n '__redlock_state_is first' -a extend -d 'Reset the time-to-live of a lock held by TOKEN'
complete -c redlock -n '__redlock_state_is first' -a status -d 'Show who holds a lock'
complete -c redlock -n '__redlock_state_is first' -a list -d 'List the held locks'
complete -c redlock -n '__redlock_state_is first' -a break -d 'Delete a lock whoever holds it'
complete -c redlock -n '__redlock_state_is first' -a stop -d 'Ask the holders of a lock to stop, and wait'
complete -c redlock -n '__redlock_state_is first' -a runs -d 'Show the run records (--record) of every matching lock'

# Operands after a verb.
complete -c redlock -n '__redlock_state_is name pattern' -a '(__redlock_lock_names)' -d 'Lock'
complete -c redlock -n '__redlock_state_is token; and set -q REDLOCK_TOKEN' -a '$REDLOCK_TOKEN' -d 'Token'

# The wrapped command in the run form.
complete -c redlock -n '__redlock_state_is after-name' -a '-c --command' -d 'Run a shell command'
complete -c redlock -n '__redlock_state_is after-name command' -a '(__redlock_complete_command)'
