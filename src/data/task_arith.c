/* task_arith.c: the second synthetic task, multi-digit arithmetic ("37+485" -> "522",
 * "12-40" -> "-28"): its prompts and the exact answer of a prompt. The answer of any task prompt
 * goes through pw_task_answer_ints, which tells the tasks apart by their prompts (letters only,
 * or digits with one operator between), so the gold scorer and the verifier need no task flag.
 * docs/task.md, "Arithmetic". */
#include <stdio.h>
#include <string.h>

#include "pw_task.h"

/* a number of exactly `digits` digits (a leading zero only for the single digit 0..9) */
static long long draw_number(int digits, uint64_t *rng)
{
    long long x = digits == 1 ? pw_task_below(rng, 10) : 1 + pw_task_below(rng, 9);
    for (int i = 1; i < digits; i++) x = 10 * x + pw_task_below(rng, 10);
    return x;
}

int pw_task_arith_prompt(const PwTaskSpec *s, uint64_t *rng, char *out)
{
    int span = s->max_len - s->min_len + 1;
    long long a = draw_number(s->min_len + pw_task_below(rng, span), rng);
    long long b = draw_number(s->min_len + pw_task_below(rng, span), rng);
    char op = pw_task_below(rng, 2) ? '-' : '+';
    return snprintf(out, PW_TASK_MAX_LEN + 1, "%lld%c%lld", a, op, b);
}

/* A decimal number without sign or leading zero, of at most PW_TASK_ARITH_MAX_DIGITS digits,
 * from p[*i]; -1 if there is none. */
static long long read_number(const int *p, int n, int *i)
{
    int start = *i;
    long long x = 0;
    while (*i < n && p[*i] >= '0' && p[*i] <= '9') {
        if (*i - start == PW_TASK_ARITH_MAX_DIGITS) return -1;
        x = 10 * x + (p[*i] - '0');
        (*i)++;
    }
    int len = *i - start;
    if (len == 0 || (len > 1 && p[start] == '0')) return -1;
    return x;
}

int pw_task_arith_answer(const int *prompt, int n, int *out, int cap)
{
    int i = 0;
    long long a = read_number(prompt, n, &i);
    if (a < 0 || i >= n || (prompt[i] != '+' && prompt[i] != '-')) return -1;
    int op = prompt[i++];
    long long b = read_number(prompt, n, &i);
    if (b < 0 || i != n) return -1;
    char text[32];
    int len = snprintf(text, sizeof text, "%lld", op == '+' ? a + b : a - b);
    if (len > cap) return -1;
    for (int k = 0; k < len; k++) out[k] = (unsigned char)text[k];
    return len;
}

int pw_task_answer_ints(const int *prompt, int n, int *out, int cap)
{
    int len = pw_task_arith_answer(prompt, n, out, cap);
    if (len >= 0) return len;
    /* reversal: a prompt that contains a digit or an operator is a malformed sum, not letters */
    if (n > cap) return -1;
    for (int i = 0; i < n; i++) {
        int c = prompt[i];
        if ((c >= '0' && c <= '9') || c == '+' || c == '-') return -1;
        out[i] = prompt[n - 1 - i];
    }
    return n;
}
