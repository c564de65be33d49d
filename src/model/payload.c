/* payload.c: a model's weights as it hands them to another model of the same architecture and
 * options (pw_model.h: pw_model_weights_out / _in; docs/model.md, Models that follow). At bf16
 * a forward reads the layers' matrices in bfloat16 only, so those travel so: the payload is the
 * split layout (model_internal.h), which a model that follows holds as the front of its own
 * allocation and receives in place, with no unpacking. */
#include <stdio.h>
#include <stdlib.h>

#include "model_internal.h"

size_t pw_model_weights_bytes(const PwModel *m) { return pw_model_payload_bytes(m); }

static PwTensor bytes_tensor(const PwModel *m, void *data)
{
    int64_t shape[1] = {(int64_t)pw_model_payload_bytes(m)};
    return pw_tensor_on(data, PW_DTYPE_U8, 1, shape, m->ops->device, m->ops->device_id);
}

static PwTensor floats_tensor(const PwModel *m)
{
    int64_t shape[1] = {(int64_t)m->num_params};
    return pw_tensor_on(m->params, PW_DTYPE_F32, 1, shape, m->ops->device, m->ops->device_id);
}

/* The split layout of a model that keeps everything (the actor), packed into dst: each tensor
 * is contiguous in both, so a copy a tensor, all queued on the device as one batch (on a GPU
 * one launch: a copy each cost GPT-2's pack about 50 us of its 300 on an H100, and a wait after
 * each took it to 0.54 of one copy of the same bytes); the caller's sync waits for them */
static void pack(PwModel *m, char *dst)
{
    void *to[PW_MODEL_MAX_TENSORS + 1];
    const void *from[PW_MODEL_MAX_TENSORS + 1];
    size_t bytes[PW_MODEL_MAX_TENSORS + 1];
    int n = 0;
    uint16_t *b16 = (uint16_t *)(dst + pw_model_split_f32_bytes(m));
    pw_model_mirror_refresh(m); /* the bfloat16 of the last update */
    for (int i = 0; i < m->ntensors; i++) {
        size_t k = m->tensor_size[i];
        if (!k) continue;
        int only = m->impl->tensor_bf16_only[i];
        to[n] = only ? (void *)(b16 + m->split_off[i]) : (void *)((float *)dst + m->split_off[i]);
        from[n] = only ? (const void *)(m->params_bf16 + m->mirror_off[i])
                       : (const void *)(m->params + m->stored_off[i]);
        bytes[n++] = k * (only ? sizeof(uint16_t) : sizeof(float));
    }
    /* the padding after the float32 part goes too: zeros, not whatever the memory held */
    to[n] = (float *)dst + m->split_f32;
    from[n] = NULL;
    bytes[n++] = (m->split_f32_pad - m->split_f32) * sizeof(float);
    m->ops->copy_batch(m->ops, to, from, bytes, n);
}

int pw_model_weights_out(PwModel *m, void *into, PwTensor *out, PwErr *err)
{
    if (m->precision != PW_PRECISION_BF16) { /* the parameters themselves */
        m->ops->sync(m->ops);
        *out = floats_tensor(m);
        return 0;
    }
    if (pw_model_is_split(m)) { /* it holds the payload already */
        pw_model_mirror_refresh(m);
        m->ops->sync(m->ops);
        *out = bytes_tensor(m, m->params);
        return 0;
    }
    if (into) { /* the receiver's own memory: one pass, no copy after it */
        pack(m, (char *)into);
        m->ops->sync(m->ops);
        *out = bytes_tensor(m, into);
        return 0;
    }
    /* Between an update and the next zero_grad nothing reads the gradients, and the payload
     * (at most 4 bytes a parameter) fits in them: no memory of its own on the sender. */
    size_t bytes = m->num_params * sizeof(float);
    if (m->gsplit) { /* split gradients are smaller: their memory goes, the payload's comes */
        pw_grad_split_release(m);
        bytes = pw_model_weights_bytes(m);
    }
    if (!m->grads && !(m->grads = m->ops->alloc(m->ops, bytes)))
        return pw_model_no_room(m, "the gradients (which the weights handed over are packed "
                                "in)", bytes, err);
    pack(m, (char *)m->grads);
    m->grads_spent = 1;
    m->ops->sync(m->ops);
    *out = bytes_tensor(m, m->grads);
    return 0;
}

PwTensor pw_model_weights_in(PwModel *m)
{
    if (!m->follows) { /* a model that trains or is frozen is not written so: a caller bug */
        fprintf(stderr, "pw_model_weights_in: the model does not follow another "
                "(PwModelOpts.follows): only such a model receives weights\n");
        abort();
    }
    m->ops->sync(m->ops);
    m->mirror_stale = 1; /* the float32 part arrives; its bfloat16 copy is made before use */
    return m->precision == PW_PRECISION_BF16 ? bytes_tensor(m, m->params) : floats_tensor(m);
}
