#ifndef KIOSK_RUNTIME_SHIMS_H
#define KIOSK_RUNTIME_SHIMS_H
/* Swift concurrency's global-executor hook (swift_task_enqueueGlobal_hook), reached by address.
   Looking it up by name (dlsym) fails when the Swift runtime is linked statically: the static
   runtime's symbols stay out of the executable's dynamic symbol table. */
#include <stdbool.h>

/* Installs `hook` if no hook is installed yet (atomically); false when one already is. */
bool kiosk_install_enqueue_global_hook(const void *hook);

#endif
