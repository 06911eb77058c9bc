/*
 * RCU reader registration (see rcu_internal.h).
 */
#include "rcu_internal.h"

#include "thread_internal.h"

char cq__rcu_tsan_sync;

void cq__rcu_register(void)
{
    if (cq__unlikely(!cq__tls.rcu_registered)) {
        urcu_memb_register_thread();
        cq__tls.rcu_registered = 1;
        cq__thread_exit_hook();
    }
}

void cq__rcu_mark_liburcu_thread(void)
{
    cq__tls.rcu_registered = 2; /* registered, by liburcu: not ours to unregister */
}

void cq__rcu_unregister(void)
{
    if (cq__tls.rcu_registered == 1) {
        urcu_memb_unregister_thread();
        cq__tls.rcu_registered = 0;
    }
}
