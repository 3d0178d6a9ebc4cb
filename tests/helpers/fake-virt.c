/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fake-virt.so: a test-only LD_PRELOAD shim over libvirt's client library
 * for `daxfile watch`. Never built into the product.
 *
 * While the file named by $DAXFILE_FAKE_VIRT_UNREADABLE holds a domain's
 * name (one name a line), virDomainGetXMLDesc() of that domain fails as a
 * real one can (an RPC error, a daemon that cannot format it): the real
 * call is made with a flag the daemon refuses, so the error is libvirt's
 * own. Everything else is the real call. The watch must then take the
 * domain as still defined: a failed read is no undefine.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct _virDomain *virDomainPtr;
typedef char *(*xmldesc_fn)(virDomainPtr, unsigned int);
typedef const char *(*name_fn)(virDomainPtr);

char *virDomainGetXMLDesc(virDomainPtr dom, unsigned int flags);

/* a flag no daemon knows: it refuses the call (VIR_ERR_INVALID_ARG) */
#define FAKE_VIRT_BAD_FLAG (1u << 30)

static int
unreadable(const char *name)
{
    const char *list = getenv("DAXFILE_FAKE_VIRT_UNREADABLE");
    char line[1024];
    FILE *f;
    int hit = 0;

    if (!list || !name || !(f = fopen(list, "re")))
        return 0;
    while (!hit && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        hit = strcmp(line, name) == 0;
    }
    fclose(f);
    return hit;
}

char *
virDomainGetXMLDesc(virDomainPtr dom, unsigned int flags)
{
    static xmldesc_fn real;
    static name_fn name;

    if (!real) {
        real = (xmldesc_fn)dlsym(RTLD_NEXT, "virDomainGetXMLDesc");
        name = (name_fn)dlsym(RTLD_NEXT, "virDomainGetName");
    }
    if (name && unreadable(name(dom)))
        flags |= FAKE_VIRT_BAD_FLAG;
    return real(dom, flags);
}
