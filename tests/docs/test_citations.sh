#!/usr/bin/env bash
# test_citations.sh: the repository cites only what it holds: every cited design or style file
# exists in the tree, and every relative link of docs/*.md and README.md leads to a file.
# Usage: test_citations.sh SOURCE_ROOT (a git checkout; exits 77, meson's skip, otherwise).
set -u
root=$1
cd "$root" || exit 2
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "not a git checkout: skipped"
    exit 77
fi
fails=0

# exists PATH FROM_FILE: PATH read from the repository root or from FROM_FILE's folder
exists() {
    [ -e "$1" ] || [ -e "$(dirname "$2")/$1" ]
}

# 1. Citations of the design and style documents. Each cited path (the whole path-like word
#    that ends in the name, or a design folder) must be a file of the repository. The patterns
#    are written so that this script does not match itself.
while IFS=: read -r file line text; do
    for cited in $(printf '%s\n' "$text" |
                   grep -oE '[A-Za-z0-9_./-]*(ppo[.]md|style[.]md|desig[n]/[A-Za-z0-9_./-]*)'); do
        if ! exists "$cited" "$file"; then
            echo "FAIL $file:$line: cites '$cited', which is not in the repository"
            fails=$((fails + 1))
        fi
    done
done < <(git grep -nIE 'ppo[.]md|style[.]md|desig[n]/' -- . ':!.git')

# 2. Relative markdown links: [text](target), target without a scheme or a bare #anchor.
for file in README.md docs/*.md; do
    [ -f "$file" ] || continue
    while IFS=: read -r line link; do
        target=${link#*](}
        target=${target%)}
        target=${target%%#*}
        target=${target%% *} # [text](path "title")
        case $link in *']('[a-z]*:*) continue ;; esac
        [ -n "$target" ] || continue
        if ! [ -e "$(dirname "$file")/$target" ]; then
            echo "FAIL $file:$line: link to '$target', which does not exist"
            fails=$((fails + 1))
        fi
    done < <(grep -noE '\]\([^)]+\)' "$file")
done

echo "test_citations: $fails failed"
[ $fails -eq 0 ]
