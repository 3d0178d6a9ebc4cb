/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-cpu.h: cache flush instructions, and the choice libpmem makes
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
    DAXFILE_FLUSH_NONE = 0, /* no flush instruction: stores only fenced */
    DAXFILE_FLUSH_CLFLUSH,
    DAXFILE_FLUSH_CLFLUSHOPT,
    DAXFILE_FLUSH_CLWB,
} DaxfileFlushInsn;

typedef struct {
    gboolean clflush;    /* CPUID.01H:EDX[19] */
    gboolean clflushopt; /* CPUID.(07H,0):EBX[23] */
    gboolean clwb;       /* CPUID.(07H,0):EBX[24] */
} DaxfileCpuFeatures;

/* What the CPU this runs on offers (all FALSE on other architectures). */
void daxfile_cpu_features_detect(DaxfileCpuFeatures *ret_cpu);

/* The environment variables libpmem reads; NULL when unset. */
typedef struct {
    const char *no_clwb;       /* PMEM_NO_CLWB */
    const char *no_clflushopt; /* PMEM_NO_CLFLUSHOPT */
    const char *no_flush;      /* PMEM_NO_FLUSH */
} DaxfileFlushEnv;

/* Fill @ret_env from the process environment (pointers into it). */
void daxfile_flush_env_get(DaxfileFlushEnv *ret_env);

typedef enum {
    DAXFILE_FLUSH_WHY_CPUID = 0,     /* the best instruction CPUID offers */
    DAXFILE_FLUSH_WHY_ENV_SKIP,      /* PMEM_NO_CLWB / PMEM_NO_CLFLUSHOPT */
    DAXFILE_FLUSH_WHY_NO_FLUSH_ENV,  /* PMEM_NO_FLUSH=1: fence only */
    DAXFILE_FLUSH_WHY_EADR,          /* cpu_cache domain: fence only */
    DAXFILE_FLUSH_WHY_NO_INSN,       /* CPUID offers no flush at all */
} DaxfileFlushWhy;

typedef struct {
    DaxfileFlushInsn insn;       /* libpmem's flush instruction */
    gboolean flush;              /* FALSE: libpmem skips flushes */
    gboolean fence;              /* drain with sfence (not after clflush) */
    DaxfileFlushWhy why;
    gboolean skipped_clwb;       /* PMEM_NO_CLWB=1 on a CPU with clwb */
    gboolean skipped_clflushopt; /* PMEM_NO_CLFLUSHOPT=1 mattered */
    gboolean forced_flush;       /* PMEM_NO_FLUSH=0 overrode eADR */
} DaxfileFlushChoice;

/* libpmem's choice for @cpu under @env; @auto_flush is TRUE when every
 * NVDIMM region reports the cpu_cache persistence domain (eADR). */
void daxfile_flush_choose(const DaxfileCpuFeatures *cpu,
                          const DaxfileFlushEnv *env, gboolean auto_flush,
                          DaxfileFlushChoice *ret_choice);

const char *daxfile_flush_insn_name(DaxfileFlushInsn insn);

/* "clwb, then sfence: the best the CPU offers" and the like. */
char *daxfile_flush_choice_describe(const DaxfileFlushChoice *choice);

/* Write back the cache lines of [@addr, @addr + @len) with @insn (nothing
 * for DAXFILE_FLUSH_NONE). The instruction must be supported. */
void daxfile_flush_range(DaxfileFlushInsn insn, const void *addr,
                         size_t len);

/* sfence: order the flushes (and non-temporal stores) before later
 * stores. */
void daxfile_fence(void);

/* pmem_persist() under @choice: flush if it flushes, then drain. */
void daxfile_persist(const DaxfileFlushChoice *choice, const void *addr,
                     size_t len);

/* Fill @len bytes at @dst (16-byte aligned, @len a multiple of 16) with
 * the 8-byte @value using non-temporal stores; call daxfile_fence() to
 * drain them. */
void daxfile_nt_fill(void *dst, guint64 value, size_t len);

G_END_DECLS
