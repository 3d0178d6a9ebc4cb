/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxguest-cpu.h: cache flush instructions, and the choice libpmem makes
 *
 * The choice follows PMDK (src/libpmem2/x86_64/init.c, src/libpmem/pmem.c):
 * clflush, replaced by clflushopt unless PMEM_NO_CLFLUSHOPT=1, replaced by
 * clwb unless PMEM_NO_CLWB=1; no flush at all (only a fence) when
 * PMEM_NO_FLUSH=1, or when every region reports the cpu_cache persistence
 * domain (eADR) and PMEM_NO_FLUSH is not 0.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    DAXGUEST_FLUSH_NONE = 0, /* no flush instruction: stores only fenced */
    DAXGUEST_FLUSH_CLFLUSH,
    DAXGUEST_FLUSH_CLFLUSHOPT,
    DAXGUEST_FLUSH_CLWB,
} DaxguestFlushInsn;

typedef struct {
    gboolean clflush;    /* CPUID.01H:EDX[19] */
    gboolean clflushopt; /* CPUID.(07H,0):EBX[23] */
    gboolean clwb;       /* CPUID.(07H,0):EBX[24] */
} DaxguestCpuFeatures;

/* What the CPU this runs on offers (all FALSE on other architectures). */
void daxguest_cpu_features_detect(DaxguestCpuFeatures *ret_cpu);

/* The environment variables libpmem reads; NULL when unset. */
typedef struct {
    const char *no_clwb;       /* PMEM_NO_CLWB */
    const char *no_clflushopt; /* PMEM_NO_CLFLUSHOPT */
    const char *no_flush;      /* PMEM_NO_FLUSH */
} DaxguestFlushEnv;

/* Fill @ret_env from the process environment (pointers into it). */
void daxguest_flush_env_get(DaxguestFlushEnv *ret_env);

typedef enum {
    DAXGUEST_FLUSH_WHY_CPUID = 0,    /* the best instruction CPUID offers */
    DAXGUEST_FLUSH_WHY_ENV_SKIP,     /* PMEM_NO_CLWB / PMEM_NO_CLFLUSHOPT */
    DAXGUEST_FLUSH_WHY_NO_FLUSH_ENV, /* PMEM_NO_FLUSH=1: fence only */
    DAXGUEST_FLUSH_WHY_EADR,         /* cpu_cache domain: fence only */
    DAXGUEST_FLUSH_WHY_NO_INSN,      /* CPUID offers no flush at all */
} DaxguestFlushWhy;

typedef struct {
    DaxguestFlushInsn insn; /* libpmem's flush instruction */
    gboolean flush;         /* FALSE: libpmem skips flushes */
    gboolean fence;         /* drain with sfence (not after clflush) */
    DaxguestFlushWhy why;
    gboolean skipped_clwb;       /* PMEM_NO_CLWB=1 on a CPU with clwb */
    gboolean skipped_clflushopt; /* PMEM_NO_CLFLUSHOPT=1 mattered */
    gboolean forced_flush;       /* PMEM_NO_FLUSH=0 overrode eADR */
} DaxguestFlushChoice;

/* libpmem's choice for @cpu under @env; @auto_flush is TRUE when every
 * NVDIMM region reports the cpu_cache persistence domain (eADR). */
void daxguest_flush_choose(const DaxguestCpuFeatures *cpu,
                           const DaxguestFlushEnv *env, gboolean auto_flush,
                           DaxguestFlushChoice *ret_choice);

/* daxguest_flush_choose() for this guest: its CPU, its environment and
 * its NVDIMM regions' persistence domain */
gboolean daxguest_flush_choice_detect(DaxguestFlushChoice *ret_choice,
                                      GError **error);

const char *daxguest_flush_insn_name(DaxguestFlushInsn insn);

/* "clwb, then sfence: the best the CPU offers" and the like. */
char *daxguest_flush_choice_describe(const DaxguestFlushChoice *choice);

/* Write back the cache lines of [@addr, @addr + @len) with @insn (nothing
 * for DAXGUEST_FLUSH_NONE). The instruction must be supported. */
void daxguest_flush_range(DaxguestFlushInsn insn, const void *addr, size_t len);

/* sfence: order the flushes (and non-temporal stores) before later
 * stores. */
void daxguest_fence(void);

/* pmem_persist() under @choice: flush if it flushes, then drain. */
void daxguest_persist(const DaxguestFlushChoice *choice, const void *addr,
                      size_t len);

/* Fill @len bytes at @dst (16-byte aligned, @len a multiple of 16) with
 * the 8-byte @value using non-temporal stores; call daxguest_fence() to
 * drain them. */
void daxguest_nt_fill(void *dst, guint64 value, size_t len);

G_END_DECLS
