/*
 * Compile-only: each DIAG_* selects one misuse that must not compile, and ctest checks that the
 * compiler's message names it (see CMakeLists.txt). Nothing here is ever linked or run.
 */
#if defined(DIAG_REAL_FIRST)
#include <dispatch/dispatch.h>
#include <cq_dispatch.h>
#elif defined(DIAG_REAL_AFTER)
#include <cq_dispatch.h>
#include <dispatch/dispatch.h>
#else
#include <cq_dispatch.h>
#endif

void diag(void);

void diag(void)
{
#if defined(DIAG_MACH)
    dispatch_source_t source = dispatch_source_create(DISPATCH_SOURCE_TYPE_MACH_RECV, 0, 0, 0);
    (void)source;
#elif defined(DIAG_FUNLOCK)
    unsigned long mask = DISPATCH_VNODE_FUNLOCK;
    (void)mask;
#elif defined(DIAG_QOS)
    int qos = dispatch_queue_get_qos_class(dispatch_get_main_queue(), 0);
    (void)qos;
#elif defined(DIAG_WORKLOOP)
    int loop = dispatch_workloop_create("loop");
    (void)loop;
#endif
}
