/* The guide's dispatch_once -> cq_once_f, in C (docs/guide.md). */
#include "guide_support.h"
#include <stdatomic.h>

static atomic_int builds;

/* guide:begin once */
struct catalog {
    int prices[100];
};

static struct catalog shared_catalog;

static void build_catalog(void *context)
{
    struct catalog *catalog = context;
    for (int i = 0; i < 100; i++) {
        catalog->prices[i] = i * 10;
    }
    atomic_fetch_add(&builds, 1);
}

static const struct catalog *catalog_shared(void)
{
    static cq_once_t once; /* zero: not yet run */
    cq_once_f(&once, &shared_catalog, build_catalog); /* others wait until it has run */
    return &shared_catalog;
}
/* guide:end once */

static atomic_int wrong;

static void look_up(void *context, size_t i)
{
    if (catalog_shared()->prices[i % 100] != (int)(i % 100) * 10) {
        atomic_fetch_add(&wrong, 1);
    }
}

int main(void)
{
    guide_apply(10000, NULL, look_up);
    GUIDE_CHECK(atomic_load(&builds) == 1);
    GUIDE_CHECK(atomic_load(&wrong) == 0);
    return 0;
}
