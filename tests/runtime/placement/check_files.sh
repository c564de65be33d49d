#!/usr/bin/env bash
# check_files.sh: placement files that are not what they seem or too much of one: a FIFO, a
# device, a folder, a loop of links, a file over the size limit, YAML that makes a parser slow
# (anchors, deep nesting, many nodes) and placements whose names are too many to compare pair by
# pair. Each case is written here and run through check_placement.sh, which wants one clear
# error; the meson timeout catches a hang or a check that grows with the square of the file.
#
#   check_files.sh MPIRUN PPO_WORLD CASE
set -u
mpirun=$1 ppo=$2 case=$3
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head='roles:
  actor: { ranks: [0] }
  critic: { ranks: [0] }
  reward: { ranks: [0] }'

case $case in
fifo)
    mkfifo "$tmp/p.yaml"
    set -- 2 "$tmp/p.yaml" 'p.yaml: not a regular file \(a FIFO\)' ;;
device)
    set -- 1 /dev/zero '/dev/zero: not a regular file \(a character device\)' ;;
directory)
    mkdir "$tmp/p.yaml"
    set -- 1 "$tmp/p.yaml" 'p.yaml: is a directory' ;;
link_loop)
    ln -s b.yaml "$tmp/a.yaml" && ln -s a.yaml "$tmp/b.yaml"
    set -- 1 "$tmp/a.yaml" 'a.yaml: too many symbolic links' ;;
too_big)
    { echo "$head"; head -c 1100000 /dev/zero | tr '\0' '#'; echo; } > "$tmp/p.yaml"
    set -- 1 "$tmp/p.yaml" 'p.yaml: 1100[0-9]+ bytes, more than the 1 MiB this file may have' ;;
anchors)
    # 80,000 anchors: libyaml's loader looks each one up among all before it (minutes)
    { echo "$head"; awk 'BEGIN { printf "x: ["; for (i = 0; i < 80000; i++) printf "&a%d 1, ", i;
                                 print "0]" }'; } > "$tmp/p.yaml"
    set -- 1 "$tmp/p.yaml" 'p.yaml:5:[0-9]+: more than 256 YAML anchors' ;;
deep)
    # a million '[': libyaml's scanner rescans every open level for each token (never ends)
    { printf 'roles: '; head -c 1000000 /dev/zero | tr '\0' '['; } > "$tmp/p.yaml"
    set -- 1 "$tmp/p.yaml" 'p.yaml:1:[0-9]+: more than 64 levels of nesting' ;;
nodes)
    { echo "$head"; awk 'BEGIN { printf "x: ["; for (i = 0; i < 250000; i++) printf "1,";
                                 print "1]" }'; } > "$tmp/p.yaml"
    set -- 1 "$tmp/p.yaml" 'p.yaml:5:[0-9]+: more than 200000 YAML nodes' ;;
many_keys)
    # 90,000 keys of one mapping and the first one again at the end: compared pair by pair
    # this took minutes; sorted it takes a fraction of a second
    awk 'BEGIN { for (i = 0; i < 90000; i++) print "k" i ": 0"; print "k0: 1" }' > "$tmp/p.yaml"
    set -- 1 "$tmp/p.yaml" 'p.yaml:90001:1: duplicate key .k0. \(first at line 1\)' ;;
many_members)
    # 190,000 reward members with short names (base 52), the second one again at the end
    { echo "$head" | sed '$d'; echo '  reward:'; echo '    ranks: [0]'
      awk 'BEGIN { a = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   printf "    models: ["
                   for (i = 0; i < 190000; i++) {
                       n = i; s = ""
                       do { s = s substr(a, n % 52 + 1, 1); n = int(n / 52) } while (n)
                       printf "%s,", s }
                   print "b]" }'; } > "$tmp/p.yaml"
    set -- 1 "$tmp/p.yaml" "key 'roles.reward.models\\[190000\\]': model 'b' is listed twice" \
        'first as member 1\)' ;;
*)
    echo "unknown case $case"; exit 2 ;;
esac
np=$1 file=$2
shift 2
# Cases of one rank plan the job without mpirun: the file is read by the same code either way.
[ "$np" = 1 ] && np=plan:1
exec "$here/check_placement.sh" "$mpirun" "$ppo" "$np" "$file" fail "$@"
