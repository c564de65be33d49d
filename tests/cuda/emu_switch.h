/* emu_switch.h: the switch between emu.h's coroutines (one per emulated CUDA thread).
 *
 * glibc's swapcontext saves and restores the signal mask at every switch, a system call
 * (rt_sigprocmask) each time: measured with perf on test_cache_emu, 51% of the run's samples were
 * in __swapcontext and most of the rest in the kernel's entry, copy and sigprocmask code. The
 * emulator never touches signals, so on x86-64 the switch here saves what the System V ABI has a
 * callee keep (rbx, rbp, r12 to r15, the stack pointer, MXCSR and the x87 control word) and
 * nothing more. Debian's C coroutine library, libpcl, switches through the same ucontext calls
 * where glibc has them, and Boost's coroutines are C++; the switch is twenty instructions.
 * Elsewhere than x86-64 (or with -DEMU_UCONTEXT) it is ucontext's.
 *
 *   emu_ctx_make(&c, stack, bytes, fn)   a context that starts fn (which must never return) on
 *                                        the stack
 *   emu_ctx_switch(&from, &to)           saves the running context in from, resumes to
 *
 * Included by emu.h, in the one translation unit that includes it. */
#ifndef PW_TEST_CUDA_EMU_SWITCH_H
#define PW_TEST_CUDA_EMU_SWITCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && !defined(EMU_UCONTEXT)

typedef struct EmuCtx {
    void *sp; /* the stack pointer, under the saved registers */
} EmuCtx;

/* emu_ctx_jump(save, load): pushes the callee-saved registers and the two control words on
 * the running stack, stores the stack pointer in *save, takes load as the stack pointer and pops
 * the same from it; its `ret` returns into the context that saved there (or, the first time, into
 * the function emu_ctx_make put there). */
void emu_ctx_jump(void **save, void *load) __attribute__((visibility("hidden")));
__asm__(".text\n"
        ".p2align 4\n"
        ".globl emu_ctx_jump\n"
        ".hidden emu_ctx_jump\n"
        ".type emu_ctx_jump, @function\n"
        "emu_ctx_jump:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size emu_ctx_jump, .-emu_ctx_jump\n");

static inline void emu_ctx_switch(EmuCtx *from, EmuCtx *to) { emu_ctx_jump(&from->sp, to->sp); }

/* The stack as emu_ctx_jump leaves a context: from the top, 8 bytes of padding (so that fn starts
 * with the stack 8 bytes past a 16-byte boundary, as after a call), fn as the return address,
 * six zeroed registers, and the control words of the caller. */
static inline void emu_ctx_make(EmuCtx *c, void *stack, size_t bytes, void (*fn)(void))
{
    uintptr_t top = ((uintptr_t)stack + bytes) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = NULL;
    *--sp = (void *)(uintptr_t)fn;
    for (int i = 0; i < 6; i++) *--sp = NULL;
    struct {
        uint32_t mxcsr;
        uint16_t fcw, pad;
    } words = {0, 0, 0};
    __asm__ volatile("stmxcsr %0" : "=m"(words.mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(words.fcw));
    --sp;
    memcpy(sp, &words, sizeof words);
    c->sp = sp;
}

#else /* ucontext: a system call a switch, but anywhere glibc runs */

#include <ucontext.h>

typedef struct EmuCtx {
    ucontext_t uc;
} EmuCtx;

static inline void emu_ctx_switch(EmuCtx *from, EmuCtx *to) { swapcontext(&from->uc, &to->uc); }

static inline void emu_ctx_make(EmuCtx *c, void *stack, size_t bytes, void (*fn)(void))
{
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = bytes;
    c->uc.uc_link = NULL; /* fn never returns */
    makecontext(&c->uc, fn, 0);
}

#endif
#endif
