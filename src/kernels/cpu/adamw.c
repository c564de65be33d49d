/* adamw.c: the AdamW update on the CPU (Loshchilov & Hutter: weight decay applied to the
 * weights directly, not through the gradient), with bias correction as PyTorch. */
#include <math.h>

#include "pw_bf16.h"
#include "pw_kernels.h"

void pw_adamw_update(float *params, uint16_t *params16, const float *grads, float gscale,
                     float *m, float *v, size_t n, float lr, float beta1, float beta2, float eps,
                     float weight_decay, int t)
{
    /* bias corrections in double: beta^t for t in the thousands loses digits in float */
    float c1 = (float)(1.0 / (1.0 - pow(beta1, t)));
    float c2 = (float)(1.0 / (1.0 - pow(beta2, t)));
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * gscale; /* the clipped gradient: pw_scale's product, not stored */
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float p = params[i] - lr * (mi * c1 / (sqrtf(vi * c2) + eps) + weight_decay * params[i]);
        params[i] = p;
        if (params16) params16[i] = pw_bf16_from_f32(p);
    }
}
