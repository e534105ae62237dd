#include "kiosk_concurrency_hook.h"
#include <stddef.h>

/* Defined by the Swift runtime (libswift_Concurrency); a function pointer. */
extern void *swift_task_enqueueGlobal_hook;

bool kiosk_install_swift_enqueue_global_hook(void *hook) {
    void *expected = NULL;
    return __atomic_compare_exchange_n(&swift_task_enqueueGlobal_hook, &expected, hook, false,
                                       __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

void *kiosk_swift_enqueue_global_hook(void) {
    return __atomic_load_n(&swift_task_enqueueGlobal_hook, __ATOMIC_SEQ_CST);
}
