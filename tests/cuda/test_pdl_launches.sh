#!/usr/bin/env bash
# test_pdl_launches.sh: the rule of src/kernels/cuda/pdl.cuh, read off the sources. Every kernel
# a .cu file launches through pw_launch (which may launch it as a programmatic dependent, placed
# on the GPU before the kernel ahead of it has finished) must call pw_pdl_enter() as its first
# statement, before it touches global memory; a kernel that does not would read its inputs
# before they are written, and only on a GPU, only with the switch on, only sometimes. The
# kernel is found by its name (or, for the kernels a macro names, CACHE_FN(name) and the like)
# after __global__ in the .cu and .cuh files; comments before the call are allowed. The check is
# first tried on two kernels made here, one keeping the rule and one not, so that it is seen to
# refuse. Needs no GPU and no build. SRC: the repository's root (default: this script's).
set -uo pipefail
root=${SRC:-$(cd "$(dirname "$0")/../.." && pwd)}

# check DIR: each pw_launch of DIR/*.cu against its kernel's first statement; prints a line a
# launch and exits 1 on any breach (or on no launch found at all)
check() {
    perl -e '
        use strict; use warnings;
        my $dir = shift;
        my ($text, @cu) = ("");
        for my $f (sort glob("$dir/*.cu"), sort glob("$dir/*.cuh")) {
            open(my $h, "<", $f) or die "$f: $!";
            local $/; my $s = <$h>; close $h;
            $text .= $s;
            push @cu, [$f, $s] if $f =~ /\.cu$/;
        }
        my (%seen, $bad, $n);
        for my $c (@cu) {
            my ($f, $s) = @$c;
            while ($s =~ /\bpw_launch\(\s*([A-Za-z_][A-Za-z_0-9#]*)\s*,/g) {
                my $name = $1;
                next if $seen{$name}++;
                $n++;
                my $pat;
                # pw_cache_store_##SFX: the kernel CACHE_FN(cache_store) defines
                if ($name =~ /^(?:pw_)?(\w+?)_##\w+$/) {
                    $pat = qr/\b\w+\(\s*\Q$1\E\s*\)/;
                } else {
                    $pat = qr/\b\Q$name\E/;
                }
                my $skip = qr/(?:\s|\/\/[^\n]*|\/\*.*?\*\/)*/s; # blanks, comments
                if ($text !~ /__global__[^;{]*?$pat\s*\([^{]*\{($skip)(.{0,60})/s) {
                    print "FAIL $name ($f): no __global__ definition found\n";
                    $bad++;
                    next;
                }
                my $first = $2;
                if ($first =~ /^pw_pdl_enter\(\);/) {
                    print "ok   $name\n";
                } else {
                    $first =~ s/\n.*//s;
                    print "FAIL $name ($f): its first statement is not pw_pdl_enter(): $first\n";
                    $bad++;
                }
            }
        }
        if (!$n) { print "FAIL: no pw_launch in $dir/*.cu\n"; exit 1; }
        print "$n kernels launched through pw_launch, " . ($bad // 0) . " breaking the rule\n";
        exit($bad ? 1 : 0);
    ' "$1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/k.cuh" <<'KERNELS'
__global__ void good_kernel(float *x)
{
    /* a comment first is allowed */
    pw_pdl_enter();
    x[0] = 1.0f;
}
__global__ void __launch_bounds__(64) late_kernel(float *x, int n)
{
    int i = x[0] > 0.0f;
    pw_pdl_enter();
}
#define FN(name) name##_f32
__global__ void FN(macro_kernel)(float *x)
{
    pw_pdl_enter();
}
KERNELS
printf '%s\n' 'void a(void) { pw_launch(good_kernel, 1, 1, 0, s, x);' \
    'pw_launch(pw_macro_kernel_##SFX, 1, 1, 0, s, x); }' > "$tmp/good.cu"
mkdir "$tmp/bad" && cp "$tmp/k.cuh" "$tmp/bad/" &&
    printf 'void b(void) { pw_launch(late_kernel, 1, 1, 0, s, x, n); }\n' > "$tmp/bad/bad.cu"
failed=0
if ! check "$tmp" > "$tmp/good.log"; then
    cat "$tmp/good.log"
    echo "FAIL: the check refuses kernels that keep the rule"
    failed=1
fi
if check "$tmp/bad" > "$tmp/bad.log"; then
    cat "$tmp/bad.log"
    echo "FAIL: the check passes a kernel that reads global memory before pw_pdl_enter()"
    failed=1
else
    echo "the check refuses a kernel whose first statement is not pw_pdl_enter(): ok"
fi
check "$root/src/kernels/cuda" || failed=1
exit $failed
