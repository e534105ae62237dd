#include "kiosk_runtime_shims.h"
#include <stddef.h>

/* Defined by the Swift concurrency runtime (libswift_Concurrency), statically or dynamically
   linked; a function pointer, declared here as a plain pointer: only its value is exchanged. */
extern void *swift_task_enqueueGlobal_hook;

bool kiosk_install_enqueue_global_hook(const void *hook) {
    void *expected = NULL;
    return __atomic_compare_exchange_n(&swift_task_enqueueGlobal_hook, &expected, (void *)hook,
                                       false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}
