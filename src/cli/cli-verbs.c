/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "cli-common.h"
#include "cli-verbs.h"
#include "config.h"
#include "daxfile-util.h"

static void
print_usage(const CliVerb *const *verbs, gsize n)
{
    const char *program = cli_program();
    gsize i;

    printf("Usage: %s [--version] [--help] COMMAND [ARGS...]\n\nCommands:\n",
           program);
    for (i = 0; i < n; i++)
        printf("  %-12s %s\n", verbs[i]->name, verbs[i]->summary);
    printf("\nSee '%s COMMAND --help' and %s(8).\n", program, program);
}

/* The verb's options out of argv. --help and --version print and return
 * FALSE with *ret_exit = 0; a usage error prints one line and returns
 * FALSE with *ret_exit = 2. The arguments stay in argv. */
static gboolean
parse_options(const CliVerb *verb, int *argc, char ***argv, int *ret_exit)
{
    gboolean help = FALSE;
    gboolean version = FALSE;
    const GOptionEntry common[] = {
        {"help", 'h', 0, G_OPTION_ARG_NONE, &help, "Show this help", NULL},
        {"version", 0, 0, G_OPTION_ARG_NONE, &version, "Show the version",
         NULL},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(verb->params);
    g_autoptr(GError) error = NULL;
    g_autofree char *usage =
        g_strdup_printf("%s %s", cli_program(), verb->name);

    g_set_prgname(usage);
    g_option_context_set_help_enabled(ctx, FALSE);
    g_option_context_set_summary(ctx, verb->description);
    if (verb->options)
        g_option_context_add_main_entries(ctx, verb->options, NULL);
    g_option_context_add_main_entries(ctx, common, NULL);
    if (!g_option_context_parse(ctx, argc, argv, &error)) {
        *ret_exit = cli_usage_error(verb->name, "%s", error->message);
        return FALSE;
    }
    if (help) {
        g_autofree char *text = g_option_context_get_help(ctx, TRUE, NULL);

        fputs(text, stdout);
        *ret_exit = CLI_EXIT_OK;
        return FALSE;
    }
    if (version) {
        printf("%s %s\n", cli_program(), DAXFILE_VERSION);
        *ret_exit = CLI_EXIT_OK;
        return FALSE;
    }
    return TRUE;
}

/* The index of "--" in argv, or argc */
static int
find_dashdash(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (STREQ(argv[i], "--"))
            return i;
    }
    return argc;
}

/* Positional arguments argv[1..argc-1]: between min_args and max_args */
static gboolean
check_count(const CliVerb *verb, int argc, char **argv, int *ret_exit)
{
    guint n = (guint)argc - 1;

    if (n < verb->min_args) {
        *ret_exit =
            cli_usage_error(verb->name, "%s",
                            verb->too_few ? verb->too_few : "missing argument");
        return FALSE;
    }
    if (n <= verb->max_args)
        return TRUE;
    if (verb->too_many)
        *ret_exit = cli_usage_error(verb->name, "%s", verb->too_many);
    else
        *ret_exit = cli_usage_error(verb->name, "unexpected argument '%s'",
                                    argv[verb->max_args + 1]);
    return FALSE;
}

/* "VERB [OPTIONS] -- COMMAND [ARGS...]": the options, then COMMAND ARGS
 * as the verb's arguments (argv[0] the verb's name) */
static int
dispatch_command(const CliVerb *verb, int argc, char **argv)
{
    int split = find_dashdash(argc, argv);
    int n_head = split;
    char **head = argv;
    char *no_command[] = {(char *)verb->name, NULL};
    char **tail = no_command;
    int n_tail = 1;
    int ret = CLI_EXIT_OK;

    if (split < argc) {
        argv[split] = NULL;
        tail = argv + split;
        n_tail = argc - split;
    }
    if (!parse_options(verb, &n_head, &head, &ret))
        return ret;
    tail[0] = (char *)verb->name;
    if (!check_count(verb, n_tail, tail, &ret))
        return ret;
    if (n_head > 1)
        return cli_usage_error(verb->name, "unexpected argument '%s'", head[1]);
    return verb->dispatch(n_tail, tail);
}

static int
dispatch(const CliVerb *verb, int argc, char **argv)
{
    int ret = CLI_EXIT_OK;

    if (verb->flags & CLI_VERB_PASSTHROUGH)
        return verb->dispatch(argc, argv);
    if (verb->flags & CLI_VERB_COMMAND)
        return dispatch_command(verb, argc, argv);
    if (!parse_options(verb, &argc, &argv, &ret) ||
        !check_count(verb, argc, argv, &ret))
        return ret;
    return verb->dispatch(argc, argv);
}

/* Edits (insertions, deletions, substitutions) that turn @a into @b */
static gsize
levenshtein(const char *a, const char *b)
{
    gsize la = strlen(a), lb = strlen(b), i, j;
    g_autofree gsize *row = g_new(gsize, lb + 1);

    for (j = 0; j <= lb; j++)
        row[j] = j;
    for (i = 1; i <= la; i++) {
        gsize diag = row[0];

        row[0] = i;
        for (j = 1; j <= lb; j++) {
            gsize up = row[j];

            row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1),
                         diag + (a[i - 1] == b[j - 1] ? 0 : 1));
            diag = up;
        }
    }
    return row[lb];
}

/* The verb @word was probably meant as (systemd's strv_find_closest()):
 * the one it is the start of, when only one starts so, else the one
 * fewest edits away, when two at most and fewer than its length; NULL */
static const char *
closest_verb(const CliVerb *const *verbs, gsize n, const char *word)
{
    const char *prefixed = NULL, *best = NULL;
    gsize i, nprefixed = 0, best_distance = 3;

    for (i = 0; i < n; i++) {
        gsize d;

        if (g_str_has_prefix(verbs[i]->name, word)) {
            prefixed = verbs[i]->name;
            nprefixed++;
        }
        d = levenshtein(word, verbs[i]->name);
        if (d < best_distance && d < strlen(word)) {
            best = verbs[i]->name;
            best_distance = d;
        }
    }
    return nprefixed == 1 && *word ? prefixed : best;
}

int
cli_dispatch_verb(const CliVerb *const *verbs, gsize n, int argc, char **argv)
{
    const char *program = cli_program();
    const char *closest;
    gsize i;

    setlocale(LC_ALL, "");
    if (argc < 2) {
        fprintf(stderr, "%s: missing command (see '%s --help')\n", program,
                program);
        return CLI_EXIT_USAGE;
    }
    if (STREQ(argv[1], "--help") || STREQ(argv[1], "-h") ||
        STREQ(argv[1], "help")) {
        print_usage(verbs, n);
        return CLI_EXIT_OK;
    }
    if (STREQ(argv[1], "--version") || STREQ(argv[1], "version")) {
        printf("%s %s\n", program, DAXFILE_VERSION);
        return CLI_EXIT_OK;
    }
    for (i = 0; i < n; i++) {
        if (STREQ(argv[1], verbs[i]->name))
            return dispatch(verbs[i], argc - 1, argv + 1);
    }
    closest = closest_verb(verbs, n, argv[1]);
    if (closest)
        fprintf(
            stderr,
            "%s: unknown command '%s', did you mean '%s'? (see '%s --help')\n",
            program, argv[1], closest, program);
    else
        fprintf(stderr, "%s: unknown command '%s' (see '%s --help')\n", program,
                argv[1], program);
    return CLI_EXIT_USAGE;
}
