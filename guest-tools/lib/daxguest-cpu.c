/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <emmintrin.h>
#define DAXGUEST_X86 1
#endif

#include "daxfile-util.h"
#include "daxguest-cpu.h"
#include "daxfile-pmem.h"

#define CACHE_LINE ((uintptr_t)64)

void
daxguest_cpu_features_detect(DaxguestCpuFeatures *ret_cpu)
{
#ifdef DAXGUEST_X86
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
daxguest_flush_env_get(DaxguestFlushEnv *ret_env)
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

static DaxguestFlushInsn
flush_choose_insn(const DaxguestCpuFeatures *cpu, const DaxguestFlushEnv *env)
{
    /* the order of pmem_cpuinfo_to_funcs(): each later one wins */
    DaxguestFlushInsn insn = DAXGUEST_FLUSH_NONE;

    if (cpu->clflush)
        insn = DAXGUEST_FLUSH_CLFLUSH;
    if (cpu->clflushopt && !env_is(env->no_clflushopt, "1"))
        insn = DAXGUEST_FLUSH_CLFLUSHOPT;
    if (cpu->clwb && !env_is(env->no_clwb, "1"))
        insn = DAXGUEST_FLUSH_CLWB;
    return insn;
}

void
daxguest_flush_choose(const DaxguestCpuFeatures *cpu,
                      const DaxguestFlushEnv *env, gboolean auto_flush,
                      DaxguestFlushChoice *ret_choice)
{
    DaxguestFlushChoice *c = ret_choice;

    memset(c, 0, sizeof(*c));
    c->insn = flush_choose_insn(cpu, env);
    c->skipped_clwb = cpu->clwb && c->insn != DAXGUEST_FLUSH_CLWB;
    c->skipped_clflushopt = cpu->clflushopt && c->insn != DAXGUEST_FLUSH_CLWB &&
                            c->insn != DAXGUEST_FLUSH_CLFLUSHOPT;
    c->flush = c->insn != DAXGUEST_FLUSH_NONE;
    if (!c->flush)
        c->why = DAXGUEST_FLUSH_WHY_NO_INSN;
    else if (c->skipped_clwb || c->skipped_clflushopt)
        c->why = DAXGUEST_FLUSH_WHY_ENV_SKIP;
    else
        c->why = DAXGUEST_FLUSH_WHY_CPUID;

    if (env_is(env->no_flush, "1")) {
        c->flush = FALSE;
        c->why = DAXGUEST_FLUSH_WHY_NO_FLUSH_ENV;
    } else if (auto_flush && env_is(env->no_flush, "0")) {
        c->forced_flush = c->flush;
    } else if (auto_flush) {
        c->flush = FALSE;
        c->why = DAXGUEST_FLUSH_WHY_EADR;
    }
    /* clflush is ordered by itself; everything else needs an sfence (and
     * so does the fence-only mode: libpmem's pmem_drain is an sfence) */
    c->fence = !(c->flush && c->insn == DAXGUEST_FLUSH_CLFLUSH);
}

gboolean
daxguest_flush_choice_detect(DaxguestFlushChoice *ret_choice, GError **error)
{
    g_autoptr(DaxfilePmemInventory) inv = daxfile_pmem_inventory_read(error);
    DaxguestCpuFeatures cpu;
    DaxguestFlushEnv env;

    if (!inv)
        return FALSE;
    daxguest_cpu_features_detect(&cpu);
    daxguest_flush_env_get(&env);
    daxguest_flush_choose(&cpu, &env, daxfile_pmem_auto_flush(inv), ret_choice);
    return TRUE;
}

const char *
daxguest_flush_insn_name(DaxguestFlushInsn insn)
{
    switch (insn) {
    case DAXGUEST_FLUSH_CLFLUSH:
        return "clflush";
    case DAXGUEST_FLUSH_CLFLUSHOPT:
        return "clflushopt";
    case DAXGUEST_FLUSH_CLWB:
        return "clwb";
    case DAXGUEST_FLUSH_NONE:
        break;
    }
    return "none";
}

static char *
flush_why_text(const DaxguestFlushChoice *choice)
{
    switch (choice->why) {
    case DAXGUEST_FLUSH_WHY_CPUID:
        if (choice->forced_flush)
            return g_strdup("PMEM_NO_FLUSH=0 overrides eADR");
        return g_strdup("the best the CPU offers");
    case DAXGUEST_FLUSH_WHY_ENV_SKIP:
        if (choice->skipped_clwb && choice->skipped_clflushopt)
            return g_strdup("PMEM_NO_CLWB=1 and PMEM_NO_CLFLUSHOPT=1");
        if (choice->skipped_clwb)
            return g_strdup("PMEM_NO_CLWB=1");
        return g_strdup("PMEM_NO_CLFLUSHOPT=1");
    case DAXGUEST_FLUSH_WHY_NO_FLUSH_ENV:
        return g_strdup("PMEM_NO_FLUSH=1");
    case DAXGUEST_FLUSH_WHY_EADR:
        return g_strdup("eADR, every region reports cpu_cache");
    case DAXGUEST_FLUSH_WHY_NO_INSN:
        break;
    }
    return g_strdup("the CPU offers no flush instruction");
}

char *
daxguest_flush_choice_describe(const DaxguestFlushChoice *choice)
{
    g_autofree char *why = flush_why_text(choice);
    const char *name = daxguest_flush_insn_name(choice->insn);

    if (!choice->flush)
        return g_strdup_printf("no flush, sfence only: %s", why);
    if (!choice->fence)
        return g_strdup_printf("%s: %s", name, why);
    return g_strdup_printf("%s, then sfence: %s", name, why);
}

#ifdef DAXGUEST_X86
static inline void
flush_line(DaxguestFlushInsn insn, uintptr_t p)
{
    /* The encodings PMDK uses, so that old assemblers do not matter:
     * clflushopt = 66 clflush, clwb = 66 xsaveopt. */
    switch (insn) {
    case DAXGUEST_FLUSH_CLWB:
        __asm__ volatile(".byte 0x66; xsaveopt %0" : "+m"(*(volatile char *)p));
        break;
    case DAXGUEST_FLUSH_CLFLUSHOPT:
        __asm__ volatile(".byte 0x66; clflush %0" : "+m"(*(volatile char *)p));
        break;
    case DAXGUEST_FLUSH_CLFLUSH:
        _mm_clflush((const void *)p);
        break;
    case DAXGUEST_FLUSH_NONE:
        break;
    }
}
#endif

void
daxguest_flush_range(DaxguestFlushInsn insn, const void *addr, size_t len)
{
#ifdef DAXGUEST_X86
    uintptr_t p = (uintptr_t)addr & ~(CACHE_LINE - 1);
    uintptr_t end = (uintptr_t)addr + len;

    if (insn == DAXGUEST_FLUSH_NONE)
        return;
    for (; p < end; p += CACHE_LINE)
        flush_line(insn, p);
#endif
}

void
daxguest_fence(void)
{
#ifdef DAXGUEST_X86
    _mm_sfence();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

void
daxguest_persist(const DaxguestFlushChoice *choice, const void *addr,
                 size_t len)
{
    if (choice->flush)
        daxguest_flush_range(choice->insn, addr, len);
    if (choice->fence)
        daxguest_fence();
}

void
daxguest_nt_fill(void *dst, guint64 value, size_t len)
{
#ifdef DAXGUEST_X86
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
