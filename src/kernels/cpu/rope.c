/* rope.c: rotary position embeddings on the CPU (Hugging Face's rotate_half pairing), forward
 * and backward in place, and the host helper that builds inv_freq with rope_scaling. */
#include <math.h>

#include "pw_kernels.h"

/* Turns every pair by sign * angle. The angle is the fp32 product, as transformers forms it
 * (inv_freq @ position_ids in float32), so that positions in the thousands get the same cos and
 * sin as the reference model; cos and sin of that float are taken in double. */
static void rope_rotate(float *x, const int *pos, const float *inv_freq, int N, int nheads,
                        int hs, int stride, float sign)
{
    int half = hs / 2;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float p = (float)(pos ? pos[n] : n);
        float *row = x + (size_t)n * stride;
        for (int i = 0; i < half; i++) {
            float a = p * inv_freq[i];
            float c = (float)cos((double)a), s = sign * (float)sin((double)a);
            for (int h = 0; h < nheads; h++) {
                float *v = row + (size_t)h * hs;
                float x1 = v[i], x2 = v[i + half];
                v[i] = x1 * c - x2 * s;
                v[i + half] = x2 * c + x1 * s;
            }
        }
    }
}

void pw_rope_forward(float *x, const int *pos, const float *inv_freq, int N, int nheads, int hs,
                     int stride)
{
    rope_rotate(x, pos, inv_freq, N, nheads, hs, stride, 1.0f);
}

/* the transpose of a rotation is the rotation by the opposite angle */
void pw_rope_backward(float *dx, const int *pos, const float *inv_freq, int N, int nheads, int hs,
                      int stride)
{
    rope_rotate(dx, pos, inv_freq, N, nheads, hs, stride, -1.0f);
}

/* transformers' _compute_default_rope_parameters and _compute_llama3_parameters: wavelengths
 * shorter than original / high_freq_factor keep their frequency, longer than
 * original / low_freq_factor are divided by factor, and the band between blends the two. */
void pw_rope_inv_freq(float *inv_freq, int hs, double theta, const PwRopeScaling *s)
{
    for (int i = 0; i < hs / 2; i++) {
        double f = 1.0 / pow(theta, (double)(2 * i) / hs);
        if (s && s->type == 1) {
            double old = s->original_max_position_embeddings;
            double low_wl = old / s->low_freq_factor, high_wl = old / s->high_freq_factor;
            double wl = 2.0 * M_PI / f;
            if (wl > low_wl) {
                f = f / s->factor;
            } else if (!(wl < high_wl)) {
                double sm = (old / wl - s->low_freq_factor) /
                            (s->high_freq_factor - s->low_freq_factor);
                f = (1.0 - sm) * f / s->factor + sm * f;
            }
        }
        inv_freq[i] = (float)f;
    }
}
