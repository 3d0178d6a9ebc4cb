/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * static-fixture.h: what test-static-state and test-static-set share: a
 * directory of two files made by daxfile_create() (--allow-non-dax) and a
 * registry of its own per test, in the scratch directory of
 * static_fixture_init(), with the empty sysfs of no daxctl() advert
 */
#pragma once

#include "daxfile-create.h"
#include "daxfile-error.h"
#include "daxfile-file.h"
#include "daxfile-proc.h"
#include "daxfile-registry.h"
#include "daxfile-static.h"
#include "daxfile-test-util.h"

/* the set operations take pointers to the caller's items */
#define ONE(item) ((DaxfileStaticItem *const[]){(item)})
#define TWO(items) ((DaxfileStaticItem *const[]){&(items)[0], &(items)[1]})

#define K (G_GUINT64_CONSTANT(1) << 10)
#define M (G_GUINT64_CONSTANT(1) << 20)
#define ALICE "test:alice"
#define BOB "test:bob"
#define TMPFS_MAGIC_NR 0x01021994

/* A directory of two provisioned files, a.img and b.img, and the state
 * directory of the test */
typedef struct {
    char *dir;
    char *a;
    char *b;
    char *fingerprint_a; /* what create verified */
    gboolean ready;      /* FALSE: skipped, no FIEMAP here */
} Fixture;

typedef enum {
    SHAPE_SPARSE,     /* ftruncate only */
    SHAPE_TAIL_HOLE,  /* 1 MiB written, then extended */
    SHAPE_FALLOCATED, /* fallocate, never written */
    SHAPE_EMPTY,
    SHAPE_WRITTEN, /* every block written and fsync'd: ready */
} Shape;

/* a file at @path made by hand in @shape, fsync'd */
void shape_file(const char *path, Shape shape);

/* the scratch directory of the test program */
extern const char *static_fixture_scratch;

/* g_test_init() and the scratch directory @name with an empty sysfs */
void static_fixture_init(int *argc, char ***argv, const char *name);

char *make_file(const char *path);
void fixture_set_up(Fixture *fx, gconstpointer data);
void fixture_tear_down(Fixture *fx, gconstpointer data);
DaxfileFile *open_file(const char *path);
DaxfileEnableParams params_for(const char *owner);
gboolean enable(const DaxfileFile *f, const char *owner,
                DaxfileEnableResult *result, GError **error);
void enable_ok(const DaxfileFile *f, const char *owner);
GPtrArray *entries(void);
DaxfileEntry *entry_of(const DaxfileFile *f);
guint entry_count(void);
void entry_edit(const DaxfileFile *f, DaxfileEntryState state,
                DaxfileMechanism mech);
void assert_message(const GError *error, const char *part);
void assert_entry(const DaxfileFile *f, DaxfileEntryState state,
                  DaxfileMechanism mech, const char *owner);

#define STATIC_ADD(path, func)                                                 \
    g_test_add(path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
#define STATIC_ADD_DATA(path, data, func)                                      \
    g_test_add(path, Fixture, data, fixture_set_up, func, fixture_tear_down)
