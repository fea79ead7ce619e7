#!/usr/bin/env bash
#
# check-options.sh - keep `redlock --help`, the man page and the shell
# completions in agreement: every long option that --help shows must be
# described in man/redlock.1 and offered by completions/redlock.bash,
# completions/_redlock and completions/redlock.fish.
#
# Usage: tests/check-options.sh
# Environment:
#   REDLOCK         the binary whose --help is read (default: ./redlock in
#                   the repository)
#   REDLOCK_DESIGN  read when there is no binary yet: a Markdown file whose
#                   first fenced block after a line mentioning "--help text"
#                   is the help (default: /work/notes/design.md)
# Exit status: 0 all present; 1 something is missing (each missing option
# is listed on stderr); 2 no help text could be read.

set -u

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 2

REDLOCK=${REDLOCK:-$repo/redlock}
design=${REDLOCK_DESIGN:-/work/notes/design.md}

if [[ -x $REDLOCK ]]; then
	if ! help=$("$REDLOCK" --help); then
		echo "check-options: '$REDLOCK --help' failed" >&2
		exit 2
	fi
	source_name="$REDLOCK --help"
elif [[ -r $design ]]; then
	help=$(awk '/--help text/ { after = 1 }
		after && /^```/ { if (inside) exit; inside = 1; next }
		inside' "$design")
	source_name="the --help text of $design"
else
	echo "check-options: no $REDLOCK to run and no $design to read" >&2
	exit 2
fi

mapfile -t options < <(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u)
if ((${#options[@]} == 0)); then
	echo "check-options: no long option found in $source_name" >&2
	exit 2
fi

# The man page as a reader sees it (mandoc draws bold with backspaces);
# without mandoc, the mdoc source, where --url is written "Fl -url".
if command -v mandoc >/dev/null 2>&1; then
	man_text=$(mandoc -Tascii man/redlock.1 2>/dev/null | sed $'s/.\b//g')
else
	man_text=$(sed -E 's/(^|[[:space:]])Fl -/\1--/g; s/\\-/-/g' man/redlock.1)
fi

# "--opt" as a whole word: not part of "--opt-more" or "x--opt".
has_word() {
	grep -qE -- "(^|[^[:alnum:]-])$1([^[:alnum:]-]|$)"
}

missing=0
report() {
	echo "check-options: $1 is missing from $2" >&2
	missing=$((missing + 1))
}

for opt in "${options[@]}"; do
	long=${opt#--}
	has_word "$opt" <<<"$man_text" || report "$opt" man/redlock.1
	has_word "$opt" <completions/redlock.bash ||
		report "$opt" completions/redlock.bash
	has_word "$opt" <completions/_redlock || report "$opt" completions/_redlock
	# fish names a long option as "-l url" (or "--long-option url").
	grep -qE -- "(^|[[:space:]])(-l|--long-option|--long)[[:space:]]+['\"]?${long}['\"]?([[:space:]]|$)" \
		completions/redlock.fish || report "$opt" completions/redlock.fish
done

if ((missing > 0)); then
	echo "check-options: $missing missing (options from $source_name)" >&2
	exit 1
fi
echo "check-options: all ${#options[@]} long options of $source_name are in the man page and the completions"
