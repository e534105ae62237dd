import CKioskShims
import NIOCore
import NIOPosix

/// Swift concurrency's jobs on SwiftNIO's singleton event loop, installed through the runtime's
/// global-executor hook by address. SwiftNIO's own installer finds the hook with `dlsym`, which
/// fails in the release `kioskd`: its Swift runtime is linked statically, and the static
/// runtime's symbols are not in the executable's dynamic symbol table. Without the hook the jobs
/// run on libdispatch's worker pool, whose manager thread then wakes every second.
enum LoopExecutorHook {
    /// The runtime's hook type (`swift_task_enqueueGlobal_hook`): the job, and the runtime's own
    /// enqueue function, unused here.
    typealias Hook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Sends every job of the global executor to `MultiThreadedEventLoopGroup.singleton`. False
    /// when a hook was already installed (by SwiftNIO or anyone else): that one stays.
    static func install() -> Bool {
        let hook: Hook = { job, _ in
            MultiThreadedEventLoopGroup.singleton.any().enqueue(ExecutorJob(job))
        }
        return withUnsafePointer(to: hook) { p in
            p.withMemoryRebound(to: UnsafeRawPointer.self, capacity: 1) { kiosk_install_enqueue_global_hook($0.pointee) }
        }
    }
}
