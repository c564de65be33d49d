# common.sh: what the sft/rm tests share: the programs (from the environment meson gives), a
# scratch folder removed at exit, and tiny synthetic data sets written with awk.
set -u
: "${MPIRUN:?}" "${PPO_WORLD:?}" "${WEIGHTS_DIFF:?}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pw_train.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# SFT pairs "a+b=" -> "a+b" (decimal), n lines from seed.
make_sft() { # FILE N SEED
    awk -v n="$2" -v s="$3" 'BEGIN { srand(s); for (i = 0; i < n; i++) {
        a = int(rand() * 10); b = int(rand() * 10);
        printf "{\"prompt\": \"%d+%d=\", \"response\": \"%d\"}\n", a, b, a + b } }' > "$1"
}

# Preference pairs: the chosen answer repeats the prompt's word, the rejected one is another
# word ending in "!": separable from the text alone. Every other line uses the HH layout.
make_prefs() { # FILE N SEED
    awk -v n="$2" -v s="$3" 'BEGIN { srand(s); split("ab ba cab abc bca", w, " ");
        for (i = 0; i < n; i++) {
            x = w[1 + int(rand() * 5)]; y = w[1 + int(rand() * 5)];
            if (i % 2) printf "{\"chosen\": \"\\n\\nHuman: say %s\\n\\nAssistant: %s.\", " \
                              "\"rejected\": \"\\n\\nHuman: say %s\\n\\nAssistant: %s!\"}\n", x, x, x, y;
            else printf "{\"prompt\": \"say %s\", \"chosen\": \"%s.\", \"rejected\": \"%s!\"}\n",
                        x, x, y } }' > "$1"
}

# The value of key K on the last line of a metrics file (numbers only).
last_metric() { # FILE KEY
    tail -n 1 "$1" | sed -n "s|.*\"$2\": \([-0-9.e+]*\).*|\1|p"
}
first_metric() { # FILE KEY
    head -n 1 "$1" | sed -n "s|.*\"$2\": \([-0-9.e+]*\).*|\1|p"
}
