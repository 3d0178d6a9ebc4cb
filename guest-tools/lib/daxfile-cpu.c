/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <emmintrin.h>
#define DAXFILE_X86 1
#endif

#include "daxfile-cpu.h"
#include "daxfile-util.h"

#define CACHE_LINE ((uintptr_t)64)

void
daxfile_cpu_features_detect(DaxfileCpuFeatures *ret_cpu)
{
#ifdef DAXFILE_X86
    unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;

    memset(ret_cpu, 0, sizeof(*ret_cpu));
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        ret_cpu->clflush = (edx & (1u << 19)) != 0;
    if (__get_cpuid_max(0, NULL) >= 7 &&
        __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
        ret_cpu->clflushopt = (ebx & (1u << 23)) != 0;
        ret_cpu->clwb = (ebx & (1u << 24)) != 0;
    }
#else
    memset(ret_cpu, 0, sizeof(*ret_cpu));
#endif
}

void
daxfile_flush_env_get(DaxfileFlushEnv *ret_env)
{
    ret_env->no_clwb = g_getenv("PMEM_NO_CLWB");
    ret_env->no_clflushopt = g_getenv("PMEM_NO_CLFLUSHOPT");
    ret_env->no_flush = g_getenv("PMEM_NO_FLUSH");
}

static gboolean
env_is(const char *value, const char *want)
{
    /* libpmem compares with strcmp(e, "1"): "yes" or " 1" do not count */
    return value && STREQ(value, want);
}

static DaxfileFlushInsn
flush_choose_insn(const DaxfileCpuFeatures *cpu, const DaxfileFlushEnv *env)
{
    /* the order of pmem_cpuinfo_to_funcs(): each later one wins */
    DaxfileFlushInsn insn = DAXFILE_FLUSH_NONE;

    if (cpu->clflush)
        insn = DAXFILE_FLUSH_CLFLUSH;
    if (cpu->clflushopt && !env_is(env->no_clflushopt, "1"))
        insn = DAXFILE_FLUSH_CLFLUSHOPT;
    if (cpu->clwb && !env_is(env->no_clwb, "1"))
        insn = DAXFILE_FLUSH_CLWB;
    return insn;
}

void
daxfile_flush_choose(const DaxfileCpuFeatures *cpu,
                     const DaxfileFlushEnv *env, gboolean auto_flush,
                     DaxfileFlushChoice *ret_choice)
{
    DaxfileFlushChoice *c = ret_choice;

    memset(c, 0, sizeof(*c));
    c->insn = flush_choose_insn(cpu, env);
    c->skipped_clwb = cpu->clwb && c->insn != DAXFILE_FLUSH_CLWB;
    c->skipped_clflushopt = cpu->clflushopt &&
                            c->insn != DAXFILE_FLUSH_CLWB &&
                            c->insn != DAXFILE_FLUSH_CLFLUSHOPT;
    c->flush = c->insn != DAXFILE_FLUSH_NONE;
    if (!c->flush)
        c->why = DAXFILE_FLUSH_WHY_NO_INSN;
    else if (c->skipped_clwb || c->skipped_clflushopt)
        c->why = DAXFILE_FLUSH_WHY_ENV_SKIP;
    else
        c->why = DAXFILE_FLUSH_WHY_CPUID;

    if (env_is(env->no_flush, "1")) {
        c->flush = FALSE;
        c->why = DAXFILE_FLUSH_WHY_NO_FLUSH_ENV;
    } else if (auto_flush && env_is(env->no_flush, "0")) {
        c->forced_flush = c->flush;
    } else if (auto_flush) {
        c->flush = FALSE;
        c->why = DAXFILE_FLUSH_WHY_EADR;
    }
    /* clflush is ordered by itself; everything else needs an sfence (and
     * so does the fence-only mode: libpmem's pmem_drain is an sfence) */
    c->fence = !(c->flush && c->insn == DAXFILE_FLUSH_CLFLUSH);
}

const char *
daxfile_flush_insn_name(DaxfileFlushInsn insn)
{
    switch (insn) {
    case DAXFILE_FLUSH_CLFLUSH:
        return "clflush";
    case DAXFILE_FLUSH_CLFLUSHOPT:
        return "clflushopt";
    case DAXFILE_FLUSH_CLWB:
        return "clwb";
    case DAXFILE_FLUSH_NONE:
        break;
    }
    return "none";
}

static char *
flush_why_text(const DaxfileFlushChoice *choice)
{
    switch (choice->why) {
    case DAXFILE_FLUSH_WHY_CPUID:
        if (choice->forced_flush)
            return g_strdup("PMEM_NO_FLUSH=0 overrides eADR");
        return g_strdup("the best the CPU offers");
    case DAXFILE_FLUSH_WHY_ENV_SKIP:
        if (choice->skipped_clwb && choice->skipped_clflushopt)
            return g_strdup("PMEM_NO_CLWB=1 and PMEM_NO_CLFLUSHOPT=1");
        if (choice->skipped_clwb)
            return g_strdup("PMEM_NO_CLWB=1");
        return g_strdup("PMEM_NO_CLFLUSHOPT=1");
    case DAXFILE_FLUSH_WHY_NO_FLUSH_ENV:
        return g_strdup("PMEM_NO_FLUSH=1");
    case DAXFILE_FLUSH_WHY_EADR:
        return g_strdup("eADR, every region reports cpu_cache");
    case DAXFILE_FLUSH_WHY_NO_INSN:
        break;
    }
    return g_strdup("the CPU offers no flush instruction");
}

char *
daxfile_flush_choice_describe(const DaxfileFlushChoice *choice)
{
    g_autofree char *why = flush_why_text(choice);
    const char *name = daxfile_flush_insn_name(choice->insn);

    if (!choice->flush)
        return g_strdup_printf("no flush, sfence only: %s", why);
    if (!choice->fence)
        return g_strdup_printf("%s: %s", name, why);
    return g_strdup_printf("%s, then sfence: %s", name, why);
}

#ifdef DAXFILE_X86
static inline void
flush_line(DaxfileFlushInsn insn, uintptr_t p)
{
    /* The encodings PMDK uses, so that old assemblers do not matter:
     * clflushopt = 66 clflush, clwb = 66 xsaveopt. */
    switch (insn) {
    case DAXFILE_FLUSH_CLWB:
        __asm__ volatile(".byte 0x66; xsaveopt %0"
                         : "+m"(*(volatile char *)p));
        break;
    case DAXFILE_FLUSH_CLFLUSHOPT:
        __asm__ volatile(".byte 0x66; clflush %0"
                         : "+m"(*(volatile char *)p));
        break;
    case DAXFILE_FLUSH_CLFLUSH:
        _mm_clflush((const void *)p);
        break;
    case DAXFILE_FLUSH_NONE:
        break;
    }
}
#endif

void
daxfile_flush_range(DaxfileFlushInsn insn, const void *addr, size_t len)
{
#ifdef DAXFILE_X86
    uintptr_t p = (uintptr_t)addr & ~(CACHE_LINE - 1);
    uintptr_t end = (uintptr_t)addr + len;

    if (insn == DAXFILE_FLUSH_NONE)
        return;
    for (; p < end; p += CACHE_LINE)
        flush_line(insn, p);
#endif
}

void
daxfile_fence(void)
{
#ifdef DAXFILE_X86
    _mm_sfence();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

void
daxfile_persist(const DaxfileFlushChoice *choice, const void *addr,
                size_t len)
{
    if (choice->flush)
        daxfile_flush_range(choice->insn, addr, len);
    if (choice->fence)
        daxfile_fence();
}

void
daxfile_nt_fill(void *dst, guint64 value, size_t len)
{
#ifdef DAXFILE_X86
    __m128i v = _mm_set1_epi64x((long long)value);
    __m128i *p = dst;
    size_t i;

    for (i = 0; i < len / 16; i++)
        _mm_stream_si128(p + i, v);
#else
    guint64 *p = dst;
    size_t i;

    for (i = 0; i < len / 8; i++)
        p[i] = value;
#endif
}
