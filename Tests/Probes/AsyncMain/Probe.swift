// SQProbeAsyncMain: a program with an `async` main that uses SQQueue.main. MainActorTests runs
// it as a child process: exit status 0 means every check passed; 1 a failed check (with a
// message); SIGALRM (the watchdog) means some work never ran.
//
// Swift's runtime ends an async main's first synchronous stretch in
// swift_task_asyncMainDrainQueue, which on Linux is libdispatch's dispatch_main(): it parks the
// main thread for good, and our main queue would never run. SwiftQueues installs its own main
// loop there (cq_main_with_libdispatch), which runs both main queues on the main thread.

import Dispatch
import SwiftQueues

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

let mainThread = pthread_self()

func onMainThread() -> Bool {
    pthread_equal(pthread_self(), mainThread) != 0
}

func check(_ condition: Bool, _ message: String) {
    if !condition {
        print("SQProbeAsyncMain: check failed: \(message)")
        exit(1)
    }
}

@main
struct Probe {
    static func main() async {
        // The watchdog: work that never runs ends the probe (SIGALRM).
        var alarmOnly = sigset_t()
        sigemptyset(&alarmOnly)
        sigaddset(&alarmOnly, SIGALRM)
        pthread_sigmask(SIG_UNBLOCK, &alarmOnly, nil)
        alarm(60)
        let fromMainQueue = await withCheckedContinuation { continuation in
            SQQueue.main.async {
                continuation.resume(returning: onMainThread())
            }
        }
        check(fromMainQueue, "SQQueue.main work runs on the main thread")
        for _ in 0..<50 {
            let viaSerial = try? await SQQueue.main.run { onMainThread() }
            check(viaSerial == true, "SQQueue.main.run runs on the main thread")
            await MainActor.run {
                check(onMainThread(), "@MainActor work runs on the main thread")
            }
        }
        let fromDispatch = await withCheckedContinuation { continuation in
            DispatchQueue.main.async {
                continuation.resume(returning: onMainThread())
            }
        }
        check(fromDispatch, "DispatchQueue.main work runs on the main thread")
        // Returning ends the process with status 0.
    }
}
