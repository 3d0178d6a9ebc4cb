/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CPUID features and environment -> libpmem's flush choice (PMDK order:
 * clflush < clflushopt < clwb; PMEM_NO_CLWB, PMEM_NO_CLFLUSHOPT,
 * PMEM_NO_FLUSH; eADR when every region reports cpu_cache)
 */
#include "daxguest-cpu.h"

typedef struct {
    const char *name;
    DaxguestCpuFeatures cpu;
    DaxguestFlushEnv env;
    gboolean eadr;
    DaxguestFlushInsn insn;
    gboolean flush;
    gboolean fence;
    const char *describe;
} Case;

#define ALL                                                                    \
    {                                                                          \
        TRUE, TRUE, TRUE                                                       \
    }
#define NO_ENV                                                                 \
    {                                                                          \
        NULL, NULL, NULL                                                       \
    }

static const Case cases[] = {
    {"all", ALL, NO_ENV, FALSE, DAXGUEST_FLUSH_CLWB, TRUE, TRUE,
     "clwb, then sfence: the best the CPU offers"},
    {"no-clwb-cpu",
     {TRUE, TRUE, FALSE},
     NO_ENV,
     FALSE,
     DAXGUEST_FLUSH_CLFLUSHOPT,
     TRUE,
     TRUE,
     "clflushopt, then sfence: the best the CPU offers"},
    {"clflush-only",
     {TRUE, FALSE, FALSE},
     NO_ENV,
     FALSE,
     DAXGUEST_FLUSH_CLFLUSH,
     TRUE,
     FALSE,
     "clflush: the best the CPU offers"},
    {"nothing",
     {FALSE, FALSE, FALSE},
     NO_ENV,
     FALSE,
     DAXGUEST_FLUSH_NONE,
     FALSE,
     TRUE,
     "no flush, sfence only: the CPU offers no flush instruction"},
    {"env-no-clwb",
     ALL,
     {"1", NULL, NULL},
     FALSE,
     DAXGUEST_FLUSH_CLFLUSHOPT,
     TRUE,
     TRUE,
     "clflushopt, then sfence: PMEM_NO_CLWB=1"},
    {"env-no-clwb-no-clflushopt",
     ALL,
     {"1", "1", NULL},
     FALSE,
     DAXGUEST_FLUSH_CLFLUSH,
     TRUE,
     FALSE,
     "clflush: PMEM_NO_CLWB=1 and PMEM_NO_CLFLUSHOPT=1"},
    /* clwb still wins: PMEM_NO_CLFLUSHOPT alone changes nothing */
    {"env-no-clflushopt",
     ALL,
     {NULL, "1", NULL},
     FALSE,
     DAXGUEST_FLUSH_CLWB,
     TRUE,
     TRUE,
     "clwb, then sfence: the best the CPU offers"},
    {"env-no-clflushopt-no-clwb-cpu",
     {TRUE, TRUE, FALSE},
     {NULL, "1", NULL},
     FALSE,
     DAXGUEST_FLUSH_CLFLUSH,
     TRUE,
     FALSE,
     "clflush: PMEM_NO_CLFLUSHOPT=1"},
    /* libpmem compares with "1" exactly */
    {"env-not-one",
     ALL,
     {"yes", "true", "2"},
     FALSE,
     DAXGUEST_FLUSH_CLWB,
     TRUE,
     TRUE,
     "clwb, then sfence: the best the CPU offers"},
    {"env-no-flush",
     ALL,
     {NULL, NULL, "1"},
     FALSE,
     DAXGUEST_FLUSH_CLWB,
     FALSE,
     TRUE,
     "no flush, sfence only: PMEM_NO_FLUSH=1"},
    {"eadr", ALL, NO_ENV, TRUE, DAXGUEST_FLUSH_CLWB, FALSE, TRUE,
     "no flush, sfence only: eADR, every region reports cpu_cache"},
    {"eadr-forced-flush",
     ALL,
     {NULL, NULL, "0"},
     TRUE,
     DAXGUEST_FLUSH_CLWB,
     TRUE,
     TRUE,
     "clwb, then sfence: PMEM_NO_FLUSH=0 overrides eADR"},
    {"eadr-clflush-forced",
     {TRUE, FALSE, FALSE},
     {NULL, NULL, "0"},
     TRUE,
     DAXGUEST_FLUSH_CLFLUSH,
     TRUE,
     FALSE,
     "clflush: PMEM_NO_FLUSH=0 overrides eADR"},
};

static void
test_choose(gconstpointer data)
{
    const Case *c = data;
    DaxguestFlushChoice choice;
    g_autofree char *text = NULL;

    daxguest_flush_choose(&c->cpu, &c->env, c->eadr, &choice);
    text = daxguest_flush_choice_describe(&choice);
    g_assert_cmpint(choice.insn, ==, c->insn);
    g_assert_cmpint(choice.flush, ==, c->flush);
    g_assert_cmpint(choice.fence, ==, c->fence);
    g_assert_cmpstr(text, ==, c->describe);
}

static void
test_env(void)
{
    DaxguestFlushEnv env;

    g_setenv("PMEM_NO_CLWB", "1", TRUE);
    g_unsetenv("PMEM_NO_CLFLUSHOPT");
    g_setenv("PMEM_NO_FLUSH", "0", TRUE);
    daxguest_flush_env_get(&env);
    g_assert_cmpstr(env.no_clwb, ==, "1");
    g_assert_null(env.no_clflushopt);
    g_assert_cmpstr(env.no_flush, ==, "0");
    g_unsetenv("PMEM_NO_CLWB");
    g_unsetenv("PMEM_NO_FLUSH");
}

/* The instructions this CPU has really execute (no SIGILL), and a
 * non-temporal fill writes what it should. */
static void
test_execute(void)
{
    DaxguestCpuFeatures cpu;
    g_autofree guint64 *buf = g_malloc0(4096);
    DaxguestFlushInsn insns[] = {
        DAXGUEST_FLUSH_CLFLUSH, DAXGUEST_FLUSH_CLFLUSHOPT, DAXGUEST_FLUSH_CLWB};
    gboolean have[3];
    guint i;

    daxguest_cpu_features_detect(&cpu);
#if defined(__x86_64__)
    g_assert_true(cpu.clflush); /* part of SSE2, so of x86-64 */
#endif
    have[0] = cpu.clflush;
    have[1] = cpu.clflushopt;
    have[2] = cpu.clwb;
    for (i = 0; i < G_N_ELEMENTS(insns); i++) {
        buf[i] = i + 1;
        if (have[i])
            daxguest_flush_range(insns[i], buf, 4096);
    }
    daxguest_fence();
    daxguest_nt_fill(buf, G_GUINT64_CONSTANT(0x1122334455667788), 4096);
    daxguest_fence();
    for (i = 0; i < 512; i++)
        g_assert_cmphex(buf[i], ==, G_GUINT64_CONSTANT(0x1122334455667788));
    g_assert_cmpstr(daxguest_flush_insn_name(DAXGUEST_FLUSH_CLWB), ==, "clwb");
}

int
main(int argc, char **argv)
{
    size_t i;

    g_test_init(&argc, &argv, NULL);
    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *name =
            g_strdup_printf("/cpu/choose/%s", cases[i].name);

        g_test_add_data_func(name, &cases[i], test_choose);
    }
    g_test_add_func("/cpu/env", test_env);
    g_test_add_func("/cpu/execute", test_execute);
    return g_test_run();
}
