#ifndef KIOSK_CONCURRENCY_HOOK_H
#define KIOSK_CONCURRENCY_HOOK_H
#include <stdbool.h>

/* Sets the Swift runtime's global-enqueue hook (swift_task_enqueueGlobal_hook) to `hook` when
   no hook is set yet; false when one already is. The variable is reached at link time, so this
   works in an executable that links the Swift runtime statically, where the runtime's symbols
   are not in the dynamic symbol table and dlsym cannot find them. */
bool kiosk_install_swift_enqueue_global_hook(void *hook);

/* The hook currently set (NULL: Swift concurrency runs on libdispatch's worker pool). */
void *kiosk_swift_enqueue_global_hook(void);

#endif
